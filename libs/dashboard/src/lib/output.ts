// Stage output and context values as shown on the pipeline page. Output can be 256 KiB, so it is
// cut to a preview with "Show more"; sensitive context values are masked whatever the server sent.

export interface Preview {
  text: string;
  truncated: boolean;
  /** Characters (code points) not shown. */
  hidden: number;
}

/** JSON output pretty-printed (2 spaces); anything else as it came. */
export function prettyOutput(raw: string): string {
  const trimmed = raw.trim();
  if (!(trimmed.startsWith('{') || trimmed.startsWith('['))) return raw;
  try {
    return JSON.stringify(JSON.parse(trimmed), null, 2);
  } catch {
    return raw;
  }
}

/**
 * The first `maxChars` code points of `text`, cut back to the last line break in the final fifth
 * when there is one (so the preview ends on a whole line), and never inside a surrogate pair.
 */
export function previewText(text: string, maxChars: number): Preview {
  const codePoints = Array.from(text);
  if (codePoints.length <= maxChars) return { text, truncated: false, hidden: 0 };
  let cut = maxChars;
  const head = codePoints.slice(0, maxChars).join('');
  const lastBreak = head.lastIndexOf('\n');
  if (lastBreak >= 0) {
    const breakAt = Array.from(head.slice(0, lastBreak)).length;
    if (breakAt >= maxChars * 0.8) cut = breakAt;
  }
  return {
    text: codePoints.slice(0, cut).join(''),
    truncated: true,
    hidden: codePoints.length - cut,
  };
}

/** What the DOM may show for a context value: never the raw value of a sensitive item. */
export const MASK = '••••••';

export function contextValueText(item: { value: string; isSensitive: boolean }): string {
  return item.isSensitive ? MASK : item.value;
}
