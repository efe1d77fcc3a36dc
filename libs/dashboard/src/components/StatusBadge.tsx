import { Badge } from '@mantine/core';
import { toneOf } from '../lib/status-colors';

/**
 * A status in the spec's own spelling ("WaitingForApproval"), coloured by what it means; `label`
 * replaces the text when the raw value is not meant for reading (event kinds).
 */
export function StatusBadge({
  status,
  label,
  size = 'md',
}: {
  status: string;
  label?: string;
  size?: 'sm' | 'md' | 'lg';
}) {
  const tone = toneOf(status);
  return (
    <Badge
      size={size}
      radius="sm"
      variant="light"
      tt="none"
      style={{ color: tone.fg, background: tone.bg }}
    >
      {label ?? status}
    </Badge>
  );
}
