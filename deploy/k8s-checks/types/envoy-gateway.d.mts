// Envoy Gateway's BackendTrafficPolicy (gateway.envoyproxy.io/v1alpha1), the fields the chart uses
// for consistent hashing on a request header, from the Envoy Gateway API reference. For the schema
// check in deploy/k8s-checks/check-chart.mjs.
import type { ObjectMeta } from 'kubernetes-types/meta/v1';

export interface LocalPolicyTargetReference {
  group: string;
  kind: string;
  name: string;
  sectionName?: string;
}

export interface ConsistentHash {
  type: 'SourceIP' | 'Header' | 'Cookie';
  header?: { name: string };
  cookie?: { name: string; ttl?: string; attributes?: Record<string, string> };
  tableSize?: number;
}

export interface BackendTrafficPolicy {
  apiVersion: 'gateway.envoyproxy.io/v1alpha1';
  kind: 'BackendTrafficPolicy';
  metadata: ObjectMeta;
  spec: {
    targetRefs?: LocalPolicyTargetReference[];
    loadBalancer?: {
      type: 'ConsistentHash' | 'LeastRequest' | 'Random' | 'RoundRobin';
      consistentHash?: ConsistentHash;
    };
  };
}
