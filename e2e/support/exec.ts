import { execFile } from 'node:child_process';

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; never rejects, so a failure's output reaches the assertion. */
export function exec(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env, timeout = 120_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env, timeout, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}
