import react from '@vitejs/plugin-react';
import { defineConfig, type ProxyOptions } from 'vite';

// Served by the api-gateway under /ui/ (decision 0092), so every asset URL starts there.
// `npm run dev -w @po/dashboard` (and `vite preview`) forward the API's paths to PO_API_URL
// (default: the api-gateway of `npm run up`), so the app is same-origin there too.
const api = process.env.PO_API_URL ?? 'http://127.0.0.1:8080';
const forward: ProxyOptions = { target: api, changeOrigin: true };
const proxy = Object.fromEntries(
  [
    '/pipelines',
    '/stages',
    '/schedules',
    '/workers',
    '/worker-events',
    '/overview',
    '/version',
    '/ui/config.json',
  ].map((path) => [path, forward]),
);

// `vite preview` sends the api-gateway's CSP (dashboard contract), so a preview shows what would break.
const csp = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'self'",
  "form-action 'self'",
].join('; ');

export default defineConfig({
  base: '/ui/',
  plugins: [react()],
  // The main chunk (React, Mantine, TanStack, the list pages) is ~620 kB, 188 kB gzipped, on purpose:
  // splitting the list pages off delayed their first render (App.tsx).
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 800 },
  server: { proxy },
  preview: { proxy, headers: { 'Content-Security-Policy': csp } },
});
