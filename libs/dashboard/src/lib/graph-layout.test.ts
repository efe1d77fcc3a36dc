import { describe, expect, it } from 'vitest';
import { layoutStages, prerequisites, type LayoutStage } from './graph-layout';

const stage = (id: number, name: string, dependsOn: string[] = []): LayoutStage => ({
  id,
  name,
  dependsOn,
});

describe('prerequisites', () => {
  it('makes a stage without dependsOn wait for every earlier stage (api-spec.md)', () => {
    expect(prerequisites([stage(1, 'a'), stage(2, 'b'), stage(3, 'c')])).toEqual([[], [0], [0, 1]]);
  });

  it('uses the dependsOn names when given, ignoring unknown names and itself', () => {
    const deps = prerequisites([
      stage(1, 'a'),
      stage(2, 'b', ['a']),
      stage(3, 'c', ['a', 'nope', 'c']),
    ]);
    expect(deps).toEqual([[], [0], [0]]);
  });
});

describe('layoutStages', () => {
  it('draws a plain sequence as a chain, one stage per row', () => {
    const layout = layoutStages([stage(1, 'a'), stage(2, 'b'), stage(3, 'c')]);
    expect(layout.nodes.map((n) => [n.name, n.rank, n.column])).toEqual([
      ['a', 0, 0],
      ['b', 1, 0],
      ['c', 2, 0],
    ]);
    // c waits for a and b, but a→c is implied by a→b→c
    expect(layout.edges.map((e) => e.id)).toEqual(['1->2', '2->3']);
  });

  it('puts parallel branches side by side in the same row, and joins them', () => {
    const layout = layoutStages([
      stage(1, 'fetch'),
      stage(2, 'left', ['fetch']),
      stage(3, 'right', ['fetch']),
      stage(4, 'join', ['left', 'right']),
    ]);
    const byName = Object.fromEntries(layout.nodes.map((n) => [n.name, n]));
    expect(byName.left!.rank).toBe(1);
    expect(byName.right!.rank).toBe(1);
    expect(byName.left!.y).toBe(byName.right!.y);
    expect(byName.left!.x).toBeLessThan(byName.right!.x);
    expect(byName.join!.rank).toBe(2);
    expect(layout.edges.map((e) => e.id).sort()).toEqual(['1->2', '1->3', '2->4', '3->4']);
  });

  it('ranks a stage below its longest prerequisite chain and centres narrow rows', () => {
    const layout = layoutStages([
      stage(1, 'a'),
      stage(2, 'b', ['a']),
      stage(3, 'c', ['b']),
      stage(4, 'd', ['a', 'c']),
      stage(5, 'e', ['a']),
    ]);
    const byName = Object.fromEntries(layout.nodes.map((n) => [n.name, n]));
    expect(byName.d!.rank).toBe(3);
    expect(byName.e!.rank).toBe(1);
    // a→d is implied by a→b→c→d
    expect(layout.edges.map((e) => e.id)).not.toContain('1->4');
    expect(byName.a!.x + 90).toBeCloseTo(layout.width / 2);
  });

  it('keeps the nodes in stage position order whatever their rows', () => {
    const layout = layoutStages([stage(7, 'x'), stage(8, 'y', ['x']), stage(9, 'z', ['x'])]);
    expect(layout.nodes.map((n) => n.stageId)).toEqual([7, 8, 9]);
  });

  it('survives a cycle (never valid, but not the dashboard’s to crash on)', () => {
    const layout = layoutStages([stage(1, 'a', ['b']), stage(2, 'b', ['a'])]);
    expect(layout.nodes).toHaveLength(2);
  });

  it('lays out an empty pipeline as nothing', () => {
    expect(layoutStages([])).toEqual({ nodes: [], edges: [], width: 0, height: 0 });
  });
});
