import { Text } from '@mantine/core';
import type { ReactNode } from 'react';

/** One term and its value inside a <dl> (the pipeline's, a stage's and a schedule's facts). */
export function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div>
      <Text size="xs" fw={600} component="dt">
        {label}
      </Text>
      <Text size="sm" component="dd" m={0}>
        {children}
      </Text>
    </div>
  );
}
