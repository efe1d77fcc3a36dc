// Lays out a pipeline's stages as a graph: one row per dependency depth, top to bottom, stages
// that can run at the same depth (parallel branches) side by side. A stage's prerequisites are its
// `dependsOn` names, or, when that is empty, every earlier stage by position (api-spec.md). Edges
// are the transitive reduction of those prerequisites, so a plain sequence draws as a chain.

export interface LayoutStage {
  id: number;
  name: string;
  dependsOn: readonly string[];
}

export interface LayoutNode {
  id: string;
  stageId: number;
  name: string;
  rank: number;
  column: number;
  x: number;
  y: number;
}

export interface LayoutEdge {
  id: string;
  source: string;
  target: string;
}

export interface GraphLayout {
  nodes: LayoutNode[];
  edges: LayoutEdge[];
  width: number;
  height: number;
}

export interface LayoutSizes {
  nodeWidth: number;
  nodeHeight: number;
  gapX: number;
  gapY: number;
}

export const DEFAULT_SIZES: LayoutSizes = { nodeWidth: 180, nodeHeight: 64, gapX: 40, gapY: 56 };

/** Prerequisite indexes of each stage (positions), before reduction. */
export function prerequisites(stages: readonly LayoutStage[]): number[][] {
  const indexByName = new Map<string, number>();
  stages.forEach((stage, i) => {
    if (!indexByName.has(stage.name)) indexByName.set(stage.name, i);
  });
  return stages.map((stage, i) => {
    if (stage.dependsOn.length === 0) return Array.from({ length: i }, (_, j) => j);
    const deps = new Set<number>();
    for (const name of stage.dependsOn) {
      const j = indexByName.get(name);
      // unknown names and self-references cannot be drawn; the server validates them anyway
      if (j !== undefined && j !== i) deps.add(j);
    }
    return [...deps].sort((a, b) => a - b);
  });
}

/** Rank = length of the longest prerequisite chain below a stage; cycles (never valid) are cut. */
function ranks(deps: readonly number[][]): number[] {
  const rank = new Array<number>(deps.length).fill(-1);
  const visiting = new Set<number>();
  const visit = (i: number): number => {
    const known = rank[i] ?? -1;
    if (known >= 0) return known;
    if (visiting.has(i)) return 0;
    visiting.add(i);
    let r = 0;
    for (const j of deps[i] ?? []) r = Math.max(r, visit(j) + 1);
    visiting.delete(i);
    rank[i] = r;
    return r;
  };
  deps.forEach((_, i) => visit(i));
  return rank;
}

/** Every stage reachable below `i` through prerequisites (not including i). */
function ancestors(deps: readonly number[][]): Set<number>[] {
  const memo: (Set<number> | undefined)[] = [];
  const visiting = new Set<number>();
  const visit = (i: number): Set<number> => {
    const known = memo[i];
    if (known) return known;
    const out = new Set<number>();
    if (visiting.has(i)) return out;
    visiting.add(i);
    for (const j of deps[i] ?? []) {
      out.add(j);
      for (const k of visit(j)) out.add(k);
    }
    visiting.delete(i);
    memo[i] = out;
    return out;
  };
  return deps.map((_, i) => visit(i));
}

export function layoutStages(
  stages: readonly LayoutStage[],
  sizes: LayoutSizes = DEFAULT_SIZES,
): GraphLayout {
  const deps = prerequisites(stages);
  const rank = ranks(deps);
  const below = ancestors(deps);

  const rows: number[][] = [];
  stages.forEach((_, i) => {
    const r = rank[i] ?? 0;
    (rows[r] ??= []).push(i);
  });
  const widest = Math.max(0, ...rows.map((row) => row.length));
  const width = widest * sizes.nodeWidth + Math.max(0, widest - 1) * sizes.gapX;

  const nodes: LayoutNode[] = [];
  rows.forEach((row, r) => {
    const rowWidth = row.length * sizes.nodeWidth + (row.length - 1) * sizes.gapX;
    const offset = (width - rowWidth) / 2; // centre narrower rows under the widest
    row.forEach((i, column) => {
      const stage = stages[i]!;
      nodes.push({
        id: String(stage.id),
        stageId: stage.id,
        name: stage.name,
        rank: r,
        column,
        x: offset + column * (sizes.nodeWidth + sizes.gapX),
        y: r * (sizes.nodeHeight + sizes.gapY),
      });
    });
  });
  nodes.sort(
    (a, b) =>
      stages.findIndex((s) => s.id === a.stageId) - stages.findIndex((s) => s.id === b.stageId),
  );

  const edges: LayoutEdge[] = [];
  deps.forEach((direct, i) => {
    for (const j of direct) {
      // j is implied when another direct prerequisite already waits for it
      const implied = direct.some((k) => k !== j && below[k]?.has(j));
      if (implied) continue;
      const source = String(stages[j]!.id);
      const target = String(stages[i]!.id);
      edges.push({ id: `${source}->${target}`, source, target });
    }
  });

  const height = rows.length * sizes.nodeHeight + Math.max(0, rows.length - 1) * sizes.gapY;
  return { nodes, edges, width, height };
}
