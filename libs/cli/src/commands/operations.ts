// po operations show | cancel: the bulk reruns and cancels `po pipelines rerun|cancel --<filter>` start.
import type { OperationView } from '@po/client';
import { Argument, Command } from 'commander';
import { contextFor, type Environment } from '../context.js';
import { positiveInt } from '../input.js';
import { operationDetails } from '../render.js';

const idArgument = () => new Argument('<id>', 'operation id').argParser(positiveInt);

export function operationsCommand(env: Environment): Command {
  const operations = new Command('operations')
    .alias('operation')
    .description('follow and stop bulk reruns and cancels');

  operations
    .command('show')
    .alias('get')
    .description('show an operation: status, matched, done, failed and why')
    .addArgument(idArgument())
    .action(async (id: number, _opts: unknown, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      ctx.print(await ctx.client.operations.get(id), operationDetails);
    });

  operations
    .command('cancel')
    .description('stop an operation: nothing more is started; what was done stays')
    .addArgument(idArgument())
    .action(async (id: number, _opts: unknown, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      ctx.print(
        await ctx.client.operations.cancel(id),
        (o: OperationView) => `operation ${o.id} ${o.status} (${o.done} of ${o.matched} done)`,
      );
    });

  return operations;
}
