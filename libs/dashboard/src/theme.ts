// Mantine's defaults, adjusted where they miss WCAG AA contrast: the primary colour's shade 6
// with white text (about 3.6:1) becomes shade 8, and "dimmed" grey text becomes darker.
import { createTheme, type CSSVariablesResolver } from '@mantine/core';

export const theme = createTheme({
  primaryColor: 'blue',
  primaryShade: { light: 8, dark: 8 },
  autoContrast: true,
  defaultRadius: 'sm',
});

export const cssVariablesResolver: CSSVariablesResolver = () => ({
  variables: {},
  light: { '--mantine-color-dimmed': '#5c636a', '--mantine-color-placeholder': '#6c737a' },
  dark: {},
});
