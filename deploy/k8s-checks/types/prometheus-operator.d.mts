// The Prometheus Operator's ServiceMonitor and PrometheusRule (monitoring.coreos.com/v1), the
// fields the chart uses, from the operator's API reference. For the schema check in
// deploy/k8s-checks/check-chart.mjs.
import type { LabelSelector, ObjectMeta } from 'kubernetes-types/meta/v1';

export interface Endpoint {
  /** Name of a Service port: the chart scrapes the one named "metrics". */
  port?: string;
  targetPort?: number | string;
  path?: string;
  scheme?: 'http' | 'https';
  interval?: string;
  scrapeTimeout?: string;
  honorLabels?: boolean;
}

export interface ServiceMonitor {
  apiVersion: 'monitoring.coreos.com/v1';
  kind: 'ServiceMonitor';
  metadata: ObjectMeta;
  spec: {
    jobLabel?: string;
    namespaceSelector?: { any?: boolean; matchNames?: string[] };
    selector: LabelSelector;
    endpoints: Endpoint[];
  };
}

export interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface PrometheusRule {
  apiVersion: 'monitoring.coreos.com/v1';
  kind: 'PrometheusRule';
  metadata: ObjectMeta;
  spec: { groups: { name: string; interval?: string; rules: Rule[] }[] };
}
