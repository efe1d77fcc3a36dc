import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import globals from 'globals';
import reactHooks from 'eslint-plugin-react-hooks';

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', 'libs/db/src/generated/**', '.tools/**', '.local/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { project: './tsconfig.lint.json', tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
      'no-restricted-imports': ['error', { patterns: ['@po/*/src/*', '../../libs/*', '../../../libs/*', '**/services/*/src/*'] }],
    },
  },
  { files: ['**/*.mjs', '**/*.js'], languageOptions: { globals: globals.node } },
  // The dashboard (React SPA, decision 0092) is typed by its own tsconfig (DOM, JSX, bundler
  // resolution): the same rules as the rest, plus the rules of hooks, for .ts and .tsx alike.
  {
    files: ['libs/dashboard/**/*.ts', 'libs/dashboard/**/*.tsx'],
    languageOptions: {
      parserOptions: { project: './libs/dashboard/tsconfig.json', tsconfigRootDir: import.meta.dirname },
      globals: globals.browser,
    },
    plugins: { 'import-x': importX, 'react-hooks': reactHooks },
    rules: {
      ...reactHooks.configs.flat['recommended-latest'].rules,
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // cycles are ours to avoid; walking into vite's own module graph trips the legacy resolver
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'no-restricted-imports': ['error', { patterns: ['@po/*/src/*', '../../libs/*', '../../../libs/*', '**/services/*/src/*'] }],
    },
  },
);
