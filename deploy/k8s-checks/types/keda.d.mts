// KEDA's ScaledObject (keda.sh/v1alpha1), the fields the chart renders, from KEDA's reference
// ("ScaledObject specification", Prometheus scaler). For the schema check in
// deploy/k8s-checks/check-chart.mjs. Trigger metadata is a map of strings: KEDA refuses numbers.
import type { ObjectMeta } from 'kubernetes-types/meta/v1';

export interface ScaleTarget {
  apiVersion?: string;
  kind?: string;
  name: string;
  envSourceContainerName?: string;
}

export interface Trigger {
  type: string;
  name?: string;
  metricType?: 'AverageValue' | 'Value' | 'Utilization';
  useCachedMetrics?: boolean;
  metadata: Record<string, string>;
  authenticationRef?: { name: string; kind?: 'TriggerAuthentication' | 'ClusterTriggerAuthentication' };
}

export interface ScaledObject {
  apiVersion: 'keda.sh/v1alpha1';
  kind: 'ScaledObject';
  metadata: ObjectMeta;
  spec: {
    scaleTargetRef: ScaleTarget;
    pollingInterval?: number;
    cooldownPeriod?: number;
    initialCooldownPeriod?: number;
    idleReplicaCount?: number;
    minReplicaCount?: number;
    maxReplicaCount?: number;
    triggers: Trigger[];
  };
}
