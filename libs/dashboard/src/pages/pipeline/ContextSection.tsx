// The pipeline's context. A sensitive item's value is never put in the DOM: the API already
// redacts it, and the page shows the mask whatever came back.
import { Badge, Table, Text, Title } from '@mantine/core';
import type { ContextItem } from '../../api/types';
import { contextValueText } from '../../lib/output';

export function ContextSection({ items }: { items: ContextItem[] }) {
  return (
    <section aria-labelledby="context-heading">
      <Title order={2} size="h4" id="context-heading" mb="xs">
        Context
      </Title>
      {items.length === 0 ? (
        <Text size="sm">No context items.</Text>
      ) : (
        <Table aria-label="Context" verticalSpacing={4} fz="sm">
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Key</Table.Th>
              <Table.Th scope="col">Value</Table.Th>
              <Table.Th scope="col">Type</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {items.map((item) => (
              <Table.Tr key={item.key}>
                <Table.Td>{item.key}</Table.Td>
                <Table.Td style={{ wordBreak: 'break-word' }}>
                  {item.isSensitive ? (
                    <>
                      {contextValueText(item)}{' '}
                      <Badge size="xs" variant="outline" color="gray.8">
                        sensitive
                      </Badge>
                    </>
                  ) : (
                    contextValueText(item)
                  )}
                </Table.Td>
                <Table.Td>{item.valueType ?? '—'}</Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      )}
    </section>
  );
}
