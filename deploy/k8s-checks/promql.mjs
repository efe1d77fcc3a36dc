// A small PromQL reader for the Grafana dashboard checks (decision 0095): which series each
// expression selects, the label names its selectors and grouping clauses use, and the functions it
// calls. It tokenises the expression (strings, numbers, durations, identifiers, Grafana `$vars`)
// and tracks context, so label names inside `{…}` or `by (…)`, durations inside `[…]`, function
// names and keywords are never taken for metric names. Used by grafana-dashboard.mjs beside it and
// by the end-to-end test that compares the names with what GET /metrics serves.

/** PromQL functions (Prometheus 3.x) and aggregation operators: anything else before `(` is an error. */
export const FUNCTIONS = new Set([
  'abs', 'absent', 'absent_over_time', 'acos', 'acosh', 'asin', 'asinh', 'atan', 'atanh', 'avg_over_time',
  'ceil', 'changes', 'clamp', 'clamp_max', 'clamp_min', 'cos', 'cosh', 'count_over_time', 'day_of_month',
  'day_of_week', 'day_of_year', 'days_in_month', 'deg', 'delta', 'deriv', 'double_exponential_smoothing', 'exp',
  'floor', 'histogram_avg', 'histogram_count', 'histogram_fraction', 'histogram_quantile', 'histogram_stddev',
  'histogram_stdvar', 'histogram_sum', 'holt_winters', 'hour', 'idelta', 'increase', 'irate', 'label_join',
  'label_replace', 'last_over_time', 'ln', 'log10', 'log2', 'mad_over_time', 'max_over_time', 'min_over_time',
  'minute', 'month', 'pi', 'predict_linear', 'present_over_time', 'quantile_over_time', 'rad', 'rate', 'resets',
  'round', 'scalar', 'sgn', 'sin', 'sinh', 'sort', 'sort_by_label', 'sort_by_label_desc', 'sort_desc', 'sqrt',
  'stddev_over_time', 'stdvar_over_time', 'sum_over_time', 'tan', 'tanh', 'time', 'timestamp', 'vector', 'year',
]);
export const AGGREGATIONS = new Set([
  'sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk', 'quantile',
  'limitk', 'limit_ratio',
]);
/** Keywords followed by a parenthesised list of label names. */
const LABEL_LISTS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'atan2', 'inf', 'nan']);

const IDENT = /[a-zA-Z_:][a-zA-Z0-9_:]*/y;
const NUMBER = /(?:0x[0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)/y;
const DURATION = /(?:\d+(?:ms|s|m|h|d|w|y))+/y;
const VARIABLE = /\$(?:\{[^}]+\}|[a-zA-Z_][a-zA-Z0-9_]*)/y;
const STRING = /"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/y;

function sticky(re, text, at) {
  re.lastIndex = at;
  const match = re.exec(text);
  return match ? match[0] : undefined;
}

/** Tokens of a PromQL expression: { kind: ident|number|duration|string|var|punct, text }. */
export function tokenize(expr) {
  const tokens = [];
  let at = 0;
  while (at < expr.length) {
    const c = expr[at];
    if (/\s/.test(c)) {
      at += 1;
      continue;
    }
    if (c === '#') {
      while (at < expr.length && expr[at] !== '\n') at += 1;
      continue;
    }
    let text;
    let kind;
    if ((text = sticky(STRING, expr, at))) kind = 'string';
    else if ((text = sticky(VARIABLE, expr, at))) kind = 'var';
    else if ((text = sticky(DURATION, expr, at))) kind = 'duration';
    else if ((text = sticky(NUMBER, expr, at))) kind = 'number';
    else if ((text = sticky(IDENT, expr, at))) kind = 'ident';
    else if ((text = ['=~', '!~', '!=', '==', '>=', '<=', '^'].find((op) => expr.startsWith(op, at)) ?? (/[(){}[\],=<>+\-*/%@:]/.test(c) ? c : undefined))) kind = 'punct';
    else throw new Error(`PromQL: unexpected ${JSON.stringify(c)} at ${at} in: ${expr}`);
    tokens.push({ kind, text });
    at += text.length;
  }
  return tokens;
}

/**
 * What an expression reads: `selectors` (each metric name with the label names its matchers use),
 * `grouping` (label names of by/without/on/ignoring/group_* clauses) and `functions` called.
 * Throws on unbalanced brackets, an unknown function, or a selector without a metric name.
 */
export function analyse(expr) {
  const tokens = tokenize(expr);
  const selectors = [];
  const grouping = new Set();
  const functions = new Set();
  const depth = [];
  const next = (i) => tokens[i + 1];
  /** Index of the token closing the bracket opened at `i`. */
  const closing = (i) => {
    const open = tokens[i].text;
    const close = { '(': ')', '{': '}', '[': ']' }[open];
    let level = 0;
    for (let j = i; j < tokens.length; j += 1) {
      if (tokens[j].kind !== 'punct') continue;
      if (tokens[j].text === open) level += 1;
      else if (tokens[j].text === close && --level === 0) return j;
    }
    throw new Error(`PromQL: unclosed ${open} in: ${expr}`);
  };
  /** The label names and any __name__ of a matcher list `{…}` opened at `i`. */
  const matchers = (i) => {
    const end = closing(i);
    const labels = [];
    let name;
    for (let j = i + 1; j < end; j += 1) {
      const t = tokens[j];
      if (t.kind !== 'ident' && t.kind !== 'string') continue;
      const op = tokens[j + 1];
      if (!op || op.kind !== 'punct' || !['=', '!=', '=~', '!~'].includes(op.text)) continue;
      const label = t.kind === 'string' ? t.text.slice(1, -1) : t.text;
      if (label === '__name__' && op.text === '=' && tokens[j + 2]?.kind === 'string') name = tokens[j + 2].text.slice(1, -1);
      else labels.push(label);
      j += 2;
    }
    return { end, labels, name };
  };
  for (let i = 0; i < tokens.length; i += 1) {
    const t = tokens[i];
    if (t.kind === 'punct') {
      if (t.text === '(') depth.push(')');
      else if (t.text === ')' && depth.pop() !== ')') throw new Error(`PromQL: unbalanced ) in: ${expr}`);
      else if (t.text === '[') i = closing(i);
      else if (t.text === '{') {
        const m = matchers(i);
        if (!m.name) throw new Error(`PromQL: a selector without a metric name in: ${expr}`);
        selectors.push({ name: m.name, labels: m.labels });
        i = m.end;
      } else if (t.text === ']' || t.text === '}') throw new Error(`PromQL: unbalanced ${t.text} in: ${expr}`);
      continue;
    }
    if (t.kind !== 'ident') continue;
    const lower = t.text.toLowerCase();
    if (LABEL_LISTS.has(lower) && next(i)?.text === '(') {
      const end = closing(i + 1);
      for (let j = i + 2; j < end; j += 1) if (tokens[j].kind === 'ident') grouping.add(tokens[j].text);
      i = end;
      continue;
    }
    if (KEYWORDS.has(lower)) continue;
    // `sum by (le) (…)`: the grouping clause may come between an aggregation and its operand.
    if (AGGREGATIONS.has(t.text) && ['by', 'without'].includes(next(i)?.text.toLowerCase() ?? '')) {
      functions.add(t.text);
      continue;
    }
    if (next(i)?.text === '(') {
      if (!FUNCTIONS.has(t.text) && !AGGREGATIONS.has(t.text)) throw new Error(`PromQL: unknown function ${t.text} in: ${expr}`);
      functions.add(t.text);
      continue;
    }
    if (next(i)?.text === '{') {
      const m = matchers(i + 1);
      selectors.push({ name: t.text, labels: m.labels });
      i = m.end;
      continue;
    }
    selectors.push({ name: t.text, labels: [] });
  }
  if (depth.length > 0) throw new Error(`PromQL: unclosed ( in: ${expr}`);
  return { selectors, grouping: [...grouping], functions: [...functions] };
}

/** The metric names an expression selects (series names as served: histograms with their suffix). */
export function metricNames(expr) {
  return [...new Set(analyse(expr).selectors.map((s) => s.name))];
}

/** Grafana's `label_values(selector, label)` / `label_values(label)` variable query. */
export function labelValuesQuery(query) {
  const match = /^\s*label_values\(\s*(?:(.+?)\s*,\s*)?([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$/.exec(query);
  if (!match) throw new Error(`not a label_values query: ${query}`);
  return { selector: match[1], label: match[2] };
}

/** Every panel of a dashboard, rows' nested panels included. */
export function dashboardPanels(dashboard) {
  return (dashboard.panels ?? []).flatMap((p) => [p, ...(p.panels ?? [])]);
}

/**
 * What the dashboard queries: one entry per PromQL expression (panel targets and label_values
 * variables), with where it comes from.
 */
export function dashboardQueries(dashboard) {
  const out = [];
  for (const panel of dashboardPanels(dashboard)) {
    for (const target of panel.targets ?? []) out.push({ where: `panel "${panel.title}" ${target.refId}`, expr: target.expr });
  }
  for (const variable of dashboard.templating?.list ?? []) {
    if (variable.type !== 'query') continue;
    const query = typeof variable.query === 'string' ? variable.query : variable.query?.query;
    const { selector } = labelValuesQuery(query);
    if (selector) out.push({ where: `variable $${variable.name}`, expr: selector });
  }
  return out;
}
