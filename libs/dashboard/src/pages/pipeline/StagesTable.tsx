import { Text, UnstyledButton } from '@mantine/core';
import type { ColumnDef } from '@tanstack/react-table';
import { useMemo } from 'react';
import type { Stage } from '../../api/types';
import { DataTable } from '../../components/DataTable';
import { StatusBadge } from '../../components/StatusBadge';
import { elapsedMs, formatDuration } from '../../lib/format';
import { formatLocal } from '../../lib/zones';
import classes from './pipeline.module.css';

export function StagesTable({
  stages,
  selectedId,
  onSelect,
  now,
}: {
  stages: Stage[];
  selectedId: number | null;
  onSelect: (stageId: number) => void;
  now: number;
}) {
  const columns = useMemo<ColumnDef<Stage, unknown>[]>(
    () => [
      {
        header: 'Name',
        cell: ({ row }) => (
          <UnstyledButton
            className={classes.stageButton}
            aria-pressed={row.original.id === selectedId}
            onClick={() => onSelect(row.original.id)}
          >
            {row.original.name}
          </UnstyledButton>
        ),
      },
      {
        header: 'Status',
        cell: ({ row }) => {
          const s = row.original;
          return (
            <>
              <StatusBadge status={s.status} size="sm" />
              {s.status === 'RetryScheduled' && s.nextRetryAt && (
                <Text size="xs">retry at {formatLocal(s.nextRetryAt)}</Text>
              )}
              {s.lastErrorCode && (
                <Text size="xs">
                  {s.lastErrorCode}
                  {s.failureDisposition ? ` (${s.failureDisposition})` : ''}
                </Text>
              )}
            </>
          );
        },
      },
      {
        header: 'Attempt',
        cell: ({ row }) => {
          const s = row.original;
          if (s.attempt === 0) return '—';
          return s.retryAttempt > 0
            ? `${s.attempt} (${s.retryAttempt} ${s.retryAttempt === 1 ? 'retry' : 'retries'})`
            : String(s.attempt);
        },
      },
      { header: 'Worker', cell: ({ row }) => row.original.workerId ?? '—' },
      {
        header: 'Started',
        cell: ({ row }) =>
          row.original.startedAt ? (
            <time dateTime={row.original.startedAt}>{formatLocal(row.original.startedAt)}</time>
          ) : (
            '—'
          ),
      },
      {
        header: 'Duration',
        cell: ({ row }) => {
          const ms = elapsedMs(row.original.startedAt, row.original.finishedAt, now);
          return ms === null ? '—' : formatDuration(ms);
        },
      },
    ],
    [selectedId, onSelect, now],
  );
  return (
    <DataTable label="Stages" columns={columns} data={stages} getRowId={(s) => String(s.id)} />
  );
}
