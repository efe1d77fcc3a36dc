// `po`: runs one command and exits with the code it earned (README.md lists them).
import { buildProgram } from './program.js';
import { EXIT, reportError, type Io } from './errors.js';

const io: Io = {
  out: (text) => void process.stdout.write(`${text}\n`),
  err: (text) => void process.stderr.write(`${text}\n`),
};

let code: number = EXIT.OK;
const program = buildProgram({ io }, (c) => (code = c));
try {
  await program.parseAsync(process.argv);
} catch (err) {
  const output = program.opts<{ output?: 'table' | 'json' }>().output;
  code = reportError(err, io, output);
}
process.exitCode = code;
