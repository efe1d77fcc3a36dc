// Links out of the dashboard: the trace id to the tracing UI named by the api-gateway's
// DASHBOARD_TRACE_URL_TEMPLATE ("https://jaeger.example/trace/{traceId}").

/** The trace's URL, or null without a template or when the result is not an http(s) URL. */
export function traceUrl(
  template: string | null | undefined,
  traceId: string | null | undefined,
): string | null {
  if (!template || !traceId) return null;
  const href = template.split('{traceId}').join(encodeURIComponent(traceId));
  try {
    const url = new URL(href);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.toString() : null;
  } catch {
    return null;
  }
}

/** Which stage the pipeline page opens on: the one that needs attention, else the one in progress. */
export function defaultStageId(
  stages: readonly { id: number; status: string; isTerminal: boolean }[],
): number | null {
  const attention = ['WaitingForApproval', 'Failed', 'Running', 'RetryScheduled'];
  for (const status of attention) {
    const hit = stages.find((s) => s.status === status);
    if (hit) return hit.id;
  }
  return (stages.find((s) => !s.isTerminal) ?? stages[stages.length - 1])?.id ?? null;
}
