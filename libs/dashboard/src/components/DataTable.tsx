// A read-only table from TanStack Table's column model, drawn with Mantine's Table: named (for
// screen readers and tests) by `label`, header cells scoped to their columns.
import { Table, Text } from '@mantine/core';
import { flexRender, getCoreRowModel, useReactTable, type ColumnDef } from '@tanstack/react-table';

export interface DataTableProps<T> {
  label: string;
  columns: ColumnDef<T, unknown>[];
  data: T[];
  getRowId: (row: T) => string;
  empty?: string;
}

export function DataTable<T>({
  label,
  columns,
  data,
  getRowId,
  empty = 'Nothing to show.',
}: DataTableProps<T>) {
  // eslint-disable-next-line react-hooks/incompatible-library -- TanStack Table returns fresh functions each render by design
  const table = useReactTable({ data, columns, getRowId, getCoreRowModel: getCoreRowModel() });
  return (
    <Table.ScrollContainer minWidth={560}>
      <Table aria-label={label} striped highlightOnHover verticalSpacing="xs">
        <Table.Thead>
          {table.getHeaderGroups().map((group) => (
            <Table.Tr key={group.id}>
              {group.headers.map((header) => (
                <Table.Th key={header.id} scope="col">
                  {header.isPlaceholder
                    ? null
                    : flexRender(header.column.columnDef.header, header.getContext())}
                </Table.Th>
              ))}
            </Table.Tr>
          ))}
        </Table.Thead>
        <Table.Tbody>
          {table.getRowModel().rows.map((row) => (
            <Table.Tr key={row.id}>
              {row.getVisibleCells().map((cell) => (
                <Table.Td key={cell.id}>
                  {flexRender(cell.column.columnDef.cell, cell.getContext())}
                </Table.Td>
              ))}
            </Table.Tr>
          ))}
          {data.length === 0 && (
            <Table.Tr>
              <Table.Td colSpan={columns.length}>
                <Text size="sm" c="dimmed">
                  {empty}
                </Text>
              </Table.Td>
            </Table.Tr>
          )}
        </Table.Tbody>
      </Table>
    </Table.ScrollContainer>
  );
}
