// A grouped bar chart drawn as SVG: one group per 5-minute bucket, one bar per series. The SVG is
// an image with a summary as its name; the numbers are also in a visually hidden table so screen
// readers get every value, not a picture of them.
import { VisuallyHidden } from '@mantine/core';
import { useId } from 'react';
import { niceMax, ticks } from '../lib/chart';

export interface Series {
  name: string;
  color: string;
  values: number[];
}

export interface BarChartProps {
  title: string;
  labels: string[];
  series: Series[];
  height?: number;
}

const AXIS = 32;
const BOTTOM = 22;

export function BarChart({ title, labels, series, height = 180 }: BarChartProps) {
  const id = useId();
  const groupWidth = 44;
  const width = AXIS + labels.length * groupWidth + 8;
  const top = niceMax(Math.max(0, ...series.flatMap((s) => s.values)));
  const plotHeight = height - BOTTOM - 8;
  const y = (value: number) => 8 + plotHeight - (value / top) * plotHeight;
  const barWidth = Math.max(4, (groupWidth - 10) / Math.max(1, series.length));
  const totals = series
    .map((s) => `${s.values.reduce((a, b) => a + b, 0)} ${s.name.toLowerCase()}`)
    .join(', ');

  return (
    <figure style={{ margin: 0 }}>
      <svg
        role="img"
        aria-labelledby={`${id}-title`}
        viewBox={`0 0 ${width} ${height}`}
        width="100%"
        style={{ maxWidth: width * 1.6, display: 'block' }}
      >
        <title id={`${id}-title`}>{`${title}: ${totals} in the last hour`}</title>
        {ticks(top).map((t) => (
          <g key={t}>
            <line x1={AXIS} x2={width} y1={y(t)} y2={y(t)} stroke="#dee2e6" />
            <text x={AXIS - 4} y={y(t) + 4} textAnchor="end" fontSize="10" fill="#495057">
              {t}
            </text>
          </g>
        ))}
        {labels.map((label, i) => (
          <g key={label + i} transform={`translate(${AXIS + i * groupWidth + 5}, 0)`}>
            {series.map((s, j) => {
              const value = s.values[i] ?? 0;
              return (
                <rect
                  key={s.name}
                  x={j * barWidth}
                  y={y(value)}
                  width={barWidth - 1}
                  height={Math.max(0, y(0) - y(value))}
                  fill={s.color}
                >
                  <title>{`${label}: ${value} ${s.name.toLowerCase()}`}</title>
                </rect>
              );
            })}
            {i % 2 === 0 && (
              <text
                x={(groupWidth - 10) / 2}
                y={height - 6}
                textAnchor="middle"
                fontSize="10"
                fill="#495057"
              >
                {label}
              </text>
            )}
          </g>
        ))}
      </svg>
      <figcaption style={{ display: 'flex', gap: 16, fontSize: 12, marginTop: 4 }}>
        {series.map((s) => (
          <span key={s.name} style={{ display: 'inline-flex', alignItems: 'center', gap: 4 }}>
            <span
              aria-hidden
              style={{ width: 10, height: 10, background: s.color, display: 'inline-block' }}
            />
            {s.name}
          </span>
        ))}
      </figcaption>
      <VisuallyHidden>
        <table>
          <caption>{title}</caption>
          <thead>
            <tr>
              <th scope="col">5 minutes from</th>
              {series.map((s) => (
                <th key={s.name} scope="col">
                  {s.name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {labels.map((label, i) => (
              <tr key={label + i}>
                <th scope="row">{label}</th>
                {series.map((s) => (
                  <td key={s.name}>{s.values[i] ?? 0}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </VisuallyHidden>
    </figure>
  );
}
