// Types of promql.mjs for the TypeScript end-to-end tests.
export const FUNCTIONS: Set<string>;
export const AGGREGATIONS: Set<string>;

export interface Token {
  kind: 'ident' | 'number' | 'duration' | 'string' | 'var' | 'punct';
  text: string;
}
export function tokenize(expr: string): Token[];

export interface Selector {
  /** The series name as served (a histogram's with its _bucket, _sum or _count suffix). */
  name: string;
  /** Label names its matchers use (without __name__). */
  labels: string[];
}
export function analyse(expr: string): { selectors: Selector[]; grouping: string[]; functions: string[] };
export function metricNames(expr: string): string[];
export function labelValuesQuery(query: string): { selector: string | undefined; label: string };

export interface DashboardPanel {
  type: string;
  title: string;
  panels?: DashboardPanel[];
  targets?: { refId: string; expr: string }[];
  [key: string]: unknown;
}
export interface Dashboard {
  panels?: DashboardPanel[];
  templating?: { list?: { type: string; name: string; query?: string | { query: string } }[] };
  [key: string]: unknown;
}
export function dashboardPanels(dashboard: Dashboard): DashboardPanel[];
export function dashboardQueries(dashboard: Dashboard): { where: string; expr: string }[];
