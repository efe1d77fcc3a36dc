// The repository's rules, type-checked against this package's own tsconfig (examples/ is not
// part of tsconfig.lint.json). ESLint looks up the config closest to each linted file.
import root from '../eslint.config.js';

export default [
  ...root,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
  },
];
