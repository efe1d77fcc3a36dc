// Handlers as the handlers page shows them (decision 0132): their limits in words, and the limit
// form's fields read back as a PUT /handlers/{name} body.
import type { HandlerSettingsRequest, HandlerView } from '../api/types';

/** "5 at once · 2.5/s", or "none". */
export function limitsText(h: Pick<HandlerView, 'maxConcurrent' | 'maxPerSecond'>): string {
  const parts = [
    h.maxConcurrent === null ? null : `${h.maxConcurrent} at once`,
    h.maxPerSecond === null ? null : `${h.maxPerSecond}/s`,
  ].filter((p): p is string => p !== null);
  return parts.length === 0 ? 'none' : parts.join(' · ');
}

/** The limit form's text for a stored limit: empty for none. */
export function limitField(value: number | null): string {
  return value === null ? '' : String(value);
}

/**
 * The PUT body of the limit form: an empty field clears its limit (null); other text is sent as a
 * number, and the API answers a per-field 400 for one out of range (shown in the dialog). Text
 * that is no number at all is sent as it is, so the same 400 names the field.
 */
export function limitsRequest(maxConcurrent: string, maxPerSecond: string): HandlerSettingsRequest {
  const read = (text: string): number | null => {
    const t = text.trim();
    if (t === '') return null;
    const n = Number(t);
    return Number.isFinite(n) ? n : (t as unknown as number);
  };
  return { maxConcurrent: read(maxConcurrent), maxPerSecond: read(maxPerSecond) };
}
