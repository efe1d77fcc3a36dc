// The Gateway API objects the chart renders, for the schema check (deploy/k8s-checks/check-chart.mjs).
// kubernetes-types has no custom resources, and @kubernetes-models/gateway-api carries only the
// standard channel (no sessionPersistence), so these are written from the Gateway API reference
// (gateway.networking.k8s.io/v1, experimental channel v1.2+). Every field is listed, so a
// misspelled one fails the check as it would fail the CRD's structural schema.
import type { ObjectMeta } from 'kubernetes-types/meta/v1';

export interface ParentReference {
  group?: string;
  kind?: string;
  namespace?: string;
  name: string;
  sectionName?: string;
  port?: number;
}

export interface HTTPPathMatch {
  type?: 'Exact' | 'PathPrefix' | 'RegularExpression';
  value?: string;
}

export interface HTTPHeaderMatch {
  type?: 'Exact' | 'RegularExpression';
  name: string;
  value: string;
}

export interface HTTPRouteMatch {
  path?: HTTPPathMatch;
  headers?: HTTPHeaderMatch[];
  queryParams?: HTTPHeaderMatch[];
  method?: 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE' | 'CONNECT' | 'OPTIONS' | 'TRACE' | 'PATCH';
}

export interface HTTPBackendRef {
  group?: string;
  kind?: string;
  name: string;
  namespace?: string;
  port?: number;
  weight?: number;
}

/** Gateway API session persistence (GEP-1619): the gateway issues the cookie or header. */
export interface SessionPersistence {
  sessionName?: string;
  absoluteTimeout?: string;
  idleTimeout?: string;
  type?: 'Cookie' | 'Header';
  cookieConfig?: { lifetimeType?: 'Permanent' | 'Session' };
}

export interface HTTPRouteRule {
  name?: string;
  matches?: HTTPRouteMatch[];
  backendRefs?: HTTPBackendRef[];
  timeouts?: { request?: string; backendRequest?: string };
  sessionPersistence?: SessionPersistence;
}

export interface HTTPRoute {
  apiVersion: 'gateway.networking.k8s.io/v1';
  kind: 'HTTPRoute';
  metadata: ObjectMeta;
  spec: {
    parentRefs?: ParentReference[];
    hostnames?: string[];
    rules?: HTTPRouteRule[];
  };
}
