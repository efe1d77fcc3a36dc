// po workers list | events
import { Command, Option } from 'commander';
import { contextFor, type Environment } from '../context.js';
import { limitValue } from '../input.js';
import { printPage, readPages } from '../listing.js';
import { workerEventTable, workerTable } from '../render.js';

export function workersCommand(env: Environment): Command {
  const workers = new Command('workers')
    .alias('worker')
    .description("see the application's workers and what they reported");

  workers
    .command('list')
    .description('list workers: status, handlers, last heartbeat')
    .addOption(
      new Option('--limit <n>', 'at most this many workers').argParser(limitValue).default(50),
    )
    .option('--all', 'every worker, page after page')
    .option('--cursor <cursor>', 'continue from a previous listing')
    .action(async (opts: { limit: number; all?: boolean; cursor?: string }, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      printPage(
        ctx,
        await readPages((p) => ctx.client.workers.listPage(p), opts),
        'workers',
        workerTable,
      );
    });

  workers
    .command('events')
    .description("a worker's lifecycle and stage events, newest first")
    .argument('<workerId>', 'worker id (see `po workers list`)')
    .addOption(
      new Option('--limit <n>', 'at most this many events').argParser(limitValue).default(50),
    )
    .option('--all', 'every event, page after page')
    .option('--cursor <cursor>', 'continue from a previous listing')
    .action(
      async (
        workerId: string,
        opts: { limit: number; all?: boolean; cursor?: string },
        cmd: Command,
      ) => {
        const ctx = contextFor(cmd, env);
        printPage(
          ctx,
          await readPages((p) => ctx.client.workers.eventsPage(workerId, p), opts),
          'events',
          workerEventTable,
        );
      },
    );

  return workers;
}
