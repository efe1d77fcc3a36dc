// The `po` command tree. Built per run with its own output streams so tests can drive it.
import { Command, Option } from 'commander';
import { handlersCommand } from './commands/handlers.js';
import { operationsCommand } from './commands/operations.js';
import { pipelinesCommand } from './commands/pipelines.js';
import { schedulesCommand } from './commands/schedules.js';
import { webhooksCommand } from './commands/webhooks.js';
import { workersCommand } from './commands/workers.js';
import { DEFAULT_API_URL, VERSION, type Environment } from './context.js';
import { EXIT_CODES_HELP } from './errors.js';

export function buildProgram(env: Environment, setExit: (code: number) => void): Command {
  const program = new Command('po')
    .description('Command line for the pipeline orchestration API.')
    .version(VERSION, '-V, --version', 'print the version of po')
    .addOption(
      new Option('--api-url <url>', 'the API base URL').env('PO_API_URL').default(DEFAULT_API_URL),
    )
    .addOption(new Option('--api-key <key>', "the application's API key").env('PO_API_KEY'))
    .addOption(
      new Option('-o, --output <format>', 'table for people, json for scripts')
        .choices(['table', 'json'])
        .default('table'),
    )
    // Inherited by every subcommand added below: errors throw (main.ts picks the exit code)
    // and go where this run writes.
    .exitOverride()
    .configureOutput({
      writeOut: (s) => env.io.out(s.replace(/\n$/, '')),
      writeErr: (s) => env.io.err(s.replace(/\n$/, '')),
    })
    .showHelpAfterError('(add --help for usage)')
    .configureHelp({ showGlobalOptions: true })
    .addHelpText(
      'after',
      `
Examples:
  export PO_API_URL=http://127.0.0.1:8080 PO_API_KEY=pos_…
  po pipelines list --status Failed --since 24h
  po pipelines create -f pipeline.yaml --watch
  po -o json pipelines get 42
  po schedules apply -f schedule.yaml
  po handlers limit payments --max-per-second 5
  po pipelines rerun --status Failed --name-prefix nightly --since 2h --dry-run
  po webhooks put ops --url https://hooks.example/po --events pipeline.failed,stage.failed

${EXIT_CODES_HELP}`,
    );
  program.addCommand(copySettings(program, pipelinesCommand(env, setExit)));
  program.addCommand(copySettings(program, schedulesCommand(env)));
  program.addCommand(copySettings(program, handlersCommand(env)));
  program.addCommand(copySettings(program, operationsCommand(env)));
  program.addCommand(copySettings(program, webhooksCommand(env)));
  program.addCommand(copySettings(program, workersCommand(env)));
  return program;
}

/** Commands made with `new Command` do not inherit; give them and their children the program's settings. */
function copySettings(program: Command, command: Command): Command {
  command.copyInheritedSettings(program);
  for (const child of command.commands) copySettings(program, child);
  return command;
}
