// The stage graph (React Flow): nodes placed by lib/graph-layout (rows by dependency depth,
// parallel branches side by side), read-only, each node naming its stage and live status.
import {
  Background,
  Controls,
  Handle,
  Position,
  ReactFlow,
  type Edge,
  type Node,
  type NodeProps,
} from '@xyflow/react';
import { Text } from '@mantine/core';
import { useMemo } from 'react';
import type { Stage } from '../../api/types';
import { StatusBadge } from '../../components/StatusBadge';
import { DEFAULT_SIZES, layoutStages } from '../../lib/graph-layout';

type StageNodeData = { name: string; status: string; attempt: number; selected: boolean };
type StageNode = Node<StageNodeData, 'stage'>;

function StageNodeView({ data }: NodeProps<StageNode>) {
  return (
    <div
      data-testid={`stage-node-${data.name}`}
      style={{
        width: DEFAULT_SIZES.nodeWidth,
        height: DEFAULT_SIZES.nodeHeight,
        border: `${data.selected ? 2 : 1}px solid ${data.selected ? '#1558a0' : '#adb5bd'}`,
        borderRadius: 6,
        background: '#fff',
        padding: '6px 10px',
        display: 'flex',
        flexDirection: 'column',
        justifyContent: 'center',
        gap: 4,
      }}
    >
      <Handle
        type="target"
        position={Position.Top}
        isConnectable={false}
        style={{ visibility: 'hidden' }}
      />
      <Text size="sm" fw={600} truncate title={data.name}>
        {data.name}
      </Text>
      <div>
        <StatusBadge status={data.status} size="sm" />
        {data.attempt > 1 && (
          <Text span size="xs" ml={6}>
            attempt {data.attempt}
          </Text>
        )}
      </div>
      <Handle
        type="source"
        position={Position.Bottom}
        isConnectable={false}
        style={{ visibility: 'hidden' }}
      />
    </div>
  );
}

const nodeTypes = { stage: StageNodeView };

export function StageGraph({
  stages,
  selectedId,
  onSelect,
}: {
  stages: Stage[];
  selectedId: number | null;
  onSelect: (stageId: number) => void;
}) {
  // the layout depends only on names and dependencies, not on the statuses that change each poll
  const shape = stages.map((s) => `${s.id}:${s.name}:${s.options.dependsOn.join(',')}`).join('|');
  const layout = useMemo(
    () =>
      layoutStages(stages.map((s) => ({ id: s.id, name: s.name, dependsOn: s.options.dependsOn }))),
    // eslint-disable-next-line react-hooks/exhaustive-deps -- keyed on the graph's shape on purpose
    [shape],
  );
  const byId = new Map(stages.map((s) => [String(s.id), s]));
  const nodes: StageNode[] = layout.nodes.map((n) => {
    const stage = byId.get(n.id);
    return {
      id: n.id,
      type: 'stage',
      position: { x: n.x, y: n.y },
      data: {
        name: n.name,
        status: stage?.status ?? 'NotStarted',
        attempt: stage?.attempt ?? 0,
        selected: stage?.id === selectedId,
      },
      draggable: false,
      connectable: false,
      ariaLabel: `Stage ${n.name}: ${stage?.status ?? ''}`,
    };
  });
  const edges: Edge[] = layout.edges.map((e) => {
    const running = byId.get(e.target)?.status === 'Running';
    return { id: e.id, source: e.source, target: e.target, type: 'smoothstep', animated: running };
  });
  const height = Math.min(520, Math.max(180, layout.height + 60));

  return (
    <div style={{ height, border: '1px solid #dee2e6', borderRadius: 6 }}>
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        fitView
        fitViewOptions={{ padding: 0.15, maxZoom: 1 }}
        nodesDraggable={false}
        nodesConnectable={false}
        elementsSelectable
        onNodeClick={(_, node) => onSelect(Number(node.id))}
        minZoom={0.2}
        proOptions={{ hideAttribution: true }}
        aria-label="Stage graph"
      >
        <Background gap={16} color="#f1f3f5" />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}
