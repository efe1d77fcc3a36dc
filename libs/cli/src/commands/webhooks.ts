// po webhooks list | show | put | delete | deliveries | retry
import { Command, Option } from 'commander';
import { WEBHOOK_EVENTS } from '@po/client';
import { contextFor, type Environment } from '../context.js';
import { UsageError } from '../errors.js';
import { deliveryTable, webhookDetails, webhookTable } from '../render.js';

const EVENTS: readonly string[] = WEBHOOK_EVENTS;

function eventList(value: string): string[] {
  const events = value
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);
  const unknown = events.filter((e) => !EVENTS.includes(e));
  if (events.length === 0 || unknown.length > 0)
    throw new UsageError(`--events takes a comma-separated list of ${EVENTS.join(', ')}`);
  return events;
}

export function webhooksCommand(env: Environment): Command {
  const webhooks = new Command('webhooks')
    .alias('webhook')
    .description('signed webhooks of pipeline, stage and schedule events, and their deliveries');

  webhooks
    .command('list')
    .description('list webhooks: enabled, url, events')
    .action(async (_opts: unknown, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      const items = await ctx.client.webhooks.list();
      if (ctx.output === 'json') ctx.io.out(JSON.stringify({ items }, null, 2));
      else if (items.length === 0) ctx.io.err('no webhooks');
      else ctx.io.out(webhookTable(items));
    });

  webhooks
    .command('show')
    .alias('get')
    .description('show a webhook')
    .argument('<name>', 'webhook name')
    .action(async (name: string, _opts: unknown, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      ctx.print(await ctx.client.webhooks.get(name), webhookDetails);
    });

  webhooks
    .command('put')
    .description(
      'create a webhook (its signing secret is printed once) or replace its url, events and enabled',
    )
    .argument('<name>', 'webhook name')
    .requiredOption('--url <url>', 'where events are POSTed (http or https)')
    .addOption(
      new Option('--events <list>', `comma-separated: ${EVENTS.join(', ')}`)
        .argParser(eventList)
        .makeOptionMandatory(),
    )
    .option('--disabled', 'store it disabled: it takes no events until enabled')
    .action(
      async (
        name: string,
        opts: { url: string; events: string[]; disabled?: boolean },
        cmd: Command,
      ) => {
        const ctx = contextFor(cmd, env);
        const webhook = await ctx.client.webhooks.put(name, {
          url: opts.url,
          events: opts.events as never,
          enabled: !opts.disabled,
        });
        ctx.print(webhook, webhookDetails);
      },
    );

  webhooks
    .command('delete')
    .description('delete a webhook and its delivery log')
    .argument('<name>', 'webhook name')
    .action(async (name: string, _opts: unknown, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      await ctx.client.webhooks.delete(name);
      ctx.io.err(`webhook ${name} deleted`);
    });

  webhooks
    .command('deliveries')
    .description('the delivery log of a webhook, newest first')
    .argument('<name>', 'webhook name')
    .option('--limit <n>', 'deliveries per page (1..100)', (v) => Number(v))
    .option('--cursor <cursor>', 'continue from a previous page (nextCursor)')
    .action(async (name: string, opts: { limit?: number; cursor?: string }, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      const page = await ctx.client.webhooks.deliveries(name, opts);
      if (ctx.output === 'json') ctx.io.out(JSON.stringify(page, null, 2));
      else if (page.items.length === 0) ctx.io.err('no deliveries');
      else {
        ctx.io.out(deliveryTable(page.items));
        if (page.nextCursor) ctx.io.err(`more: --cursor ${page.nextCursor}`);
      }
    });

  webhooks
    .command('retry')
    .description('attempt a delivery again now, under the same webhook-id')
    .argument('<name>', 'webhook name')
    .argument('<id>', 'delivery id (msg_…)')
    .action(async (name: string, id: string, _opts: unknown, cmd: Command) => {
      const ctx = contextFor(cmd, env);
      const d = await ctx.client.webhooks.retryDelivery(name, id);
      ctx.print(
        d,
        (x) => `delivery ${x.id} of ${name}: ${x.status}, attempt ${x.attempts + 1} due now`,
      );
    });

  return webhooks;
}
