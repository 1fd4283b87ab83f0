// vpctl: the operator's command line. Each run loads the appliance's configuration, opens its
// database (DATABASE_URL, else the embedded PostgreSQL under DATA_DIR: reused when the appliance
// runs, else started for this one command and stopped again), applies pending migrations, runs one
// command through the control plane's services and exits (backup, restore and doctor, in
// operations.ts, look at the database as it is instead). Results go to stdout, everything else
// (logs, errors, notes) to stderr, so `KEY=$(vpctl keys create ...)` captures just the key.
import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { ConfigError, loadConfig, type AppConfig } from '@vp/config';
import pino, { type Logger } from 'pino';
import { HttpError, Invalid } from '../../control-plane/src/http/errors.ts';
import { formatCents } from '../../control-plane/src/billing/billing.service.ts';
import { migrateDown, type Orm } from '../../control-plane/src/db/orm.ts';
import {
  backupCommand,
  doctorCommand,
  EXIT_CONFIG,
  EXIT_FAILED,
  restoreCommand,
  withDatabase,
  type Operation,
} from './operations.ts';
import { Services } from '../../control-plane/src/services.ts';
import { readPasswordFromStdin } from './password-input.ts';
import type { ApiKey } from '../../control-plane/src/auth/api-key.entity.ts';
import { agentOutdated } from '../../control-plane/src/hosts/agent-version.ts';
import { hardwareSummary } from '../../control-plane/src/hosts/hardware-summary.ts';
import type { Host } from '../../control-plane/src/hosts/host.entity.ts';
import { RELEASE_VERSION } from '../../control-plane/src/release-version.ts';
import { resealTokens } from '../../control-plane/src/deployments/deployment-tokens.ts';
import type { EntityManager } from '@mikro-orm/postgresql';

/** A usage error's exit status (the others are with the operations). */
const EXIT_USAGE = 2;

const MEMBER_ROLES = ['viewer', 'editor', 'admin'] as const;
type MemberRole = (typeof MEMBER_ROLES)[number];

interface CommandContext {
  services: Services;
  orm: Orm;
  /** Names of the migrations this run applied. */
  applied: string[];
  /** The command's result, for stdout. */
  print: (text: string) => void;
  /** A note for the operator, on stderr. */
  note: (text: string) => void;
  /** Output written to stdout at once (waiting for it to drain), for results too long to gather first. */
  stream: (text: string) => Promise<void>;
}

type Action = (context: CommandContext) => Promise<void>;

function timestamp(date: Date | null | undefined): string {
  return date ? date.toISOString().replace(/\.\d{3}Z$/, 'Z') : 'never';
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column])))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

function keyRows(keys: ApiKey[]): string[][] {
  return keys.map((key) => [
    key.prefix,
    key.workspace.handle,
    key.user.username,
    key.name,
    timestamp(key.createdAt),
    timestamp(key.lastUsedAt),
  ]);
}

/** The agent's version as it last connected, and what to do when it is not the control plane's. */
function agentColumn(version: string | null): string {
  if (version === null) return '-';
  return agentOutdated(version) ? `${version} (control plane ${RELEASE_VERSION}: upgrade)` : version;
}

function hostRows(hosts: Host[], running: Map<string, string[]>): string[][] {
  return hosts.map((host) => [
    host.name,
    host.workspace?.handle ?? '(pool)',
    host.state,
    timestamp(host.lastHeartbeatAt),
    hardwareSummary(host.hardware ?? null) ?? 'not reported',
    agentColumn(host.agentVersion ?? null),
    host.exporters.join(',') || '-',
    (running.get(host.id) ?? []).join(',') || '-',
  ]);
}

/**
 * The token goes to stdout alone, so `TOKEN=$(vpctl hosts connect ...)` captures it; the how-to goes to stderr. The
 * install-worker.sh line works on a new machine and on one whose agent knows the host: it keeps a key the control plane
 * still takes and enrolls in place of a refused one; a rotation replaces a working key, so there it adds --reenroll.
 */
function printEnrollment(
  print: (text: string) => void,
  note: (text: string) => void,
  enrollment: { enrollmentToken: string; expiresAt: string; command: string },
  rotation: boolean,
): void {
  print(enrollment.enrollmentToken);
  const install = `${enrollment.command.replace(/^vp-worker enroll /, 'sudo ./install-worker.sh ')}${rotation ? ' --reenroll' : ''}`;
  note(
    `Single use, expires ${enrollment.expiresAt.replace(/\.\d{3}Z$/, 'Z')}; it is not shown again. On the host, in the unpacked worker ` +
      `distribution (README, Worker hosts), run:\n  ${install}\n` +
      `or, for an agent not installed by install-worker.sh, enroll it (--config PATH: its config file; then start it again):\n  ${enrollment.command}`,
  );
}

/** Dollars as typed ("25", "12.50", "-3.5") to whole cents; anything else is refused. */
function dollarsToCents(amount: string): number {
  const match = /^(-?)(\d{1,10})(?:\.(\d{1,2}))?$/.exec(amount.trim());
  if (!match)
    throw Invalid(
      `"${amount}": the amount is US dollars with at most 2 decimals, e.g. 25 or 12.50 (negative for a correction)`,
    );
  const cents = Number(match[2]) * 100 + Number((match[3] ?? '').padEnd(2, '0'));
  return match[1] ? -cents : cents;
}

/** The command tree; parsing only chooses an action (run once the database is open and migrated) or an operation. */
function buildProgram(choose: (action: Action) => void, operate: (operation: Operation) => void): Command {
  const program = new Command('vpctl')
    .description(
      'Operator commands for the Vision Platform appliance (users, workspaces, members, API keys, GPU hosts, credits, migrations, backup and restore, checks).',
    )
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText(
      'after',
      `
Configuration comes from the same environment as the server: DATABASE_URL, or else the embedded
PostgreSQL under DATA_DIR (used as it is when the appliance runs, else started for the command).
Results are printed on stdout; logs and errors on stderr.
Exit status: 0 done, 1 the command failed, 2 usage error, 78 invalid configuration.`,
    );

  const users = program.command('users').description('Manage users');
  users
    .command('create')
    .description('Create a user and their personal workspace (named after the username)')
    .argument('<username>', 'username: 4-32 lowercase letters or digits, single hyphens between segments')
    .option('--name <display>', 'display name (default: the username)')
    .action((username: string, options: { name?: string }) =>
      choose(async ({ services, print }) => {
        const { user, workspace } = await services.audit.asOperator(
          'users.create',
          { workspace: username, resource: `users/${username}` },
          () => services.account.createUser(username, options.name),
        );
        print(`Created user ${user.username} (${user.name}) with personal workspace ${workspace.handle}`);
      }),
    );

  users
    .command('password')
    .description("Set a user's console password, read from stdin; ends the user's console sessions")
    .argument('<username>', 'the user who signs in with it')
    .action((username: string) =>
      choose(async ({ services, print }) => {
        const password = readPasswordFromStdin();
        await services.audit.asOperator('users.password', { workspace: username, resource: `users/${username}` }, () =>
          services.sessions.setByOperator(username, password),
        );
        print(`Set the console password of ${username}`);
      }),
    );

  const workspaces = program.command('workspaces').description('Manage team workspaces');
  workspaces
    .command('create')
    .description('Create a team workspace owned by an existing user')
    .argument('<handle>', 'workspace handle: 4-32 lowercase letters or digits, single hyphens between segments')
    .requiredOption('--owner <username>', 'the user who owns the workspace (team keys act as this user)')
    .option('--name <display>', 'display name (default: the handle)')
    .action((handle: string, options: { owner: string; name?: string }) =>
      choose(async ({ services, print }) => {
        const workspace = await services.audit.asOperator(
          'workspaces.create',
          { workspace: handle, resource: `workspaces/${handle}` },
          () => services.account.createTeam(handle, options.owner, options.name),
        );
        print(`Created team workspace ${workspace.handle} (${workspace.name}) owned by ${options.owner}`);
      }),
    );

  const members = program.command('members').description('Manage the members of team workspaces');
  members
    .command('add')
    .description("Add a member to a team workspace, or change a member's role")
    .argument('<workspace>', 'team workspace handle')
    .argument('<username>', 'the user to add')
    .addOption(new Option('--role <role>', 'the member role').choices(MEMBER_ROLES).makeOptionMandatory())
    .action((workspace: string, username: string, options: { role: MemberRole }) =>
      choose(async ({ services, print }) => {
        const membership = await services.audit.asOperator(
          'members.set_role',
          { workspace, resource: `workspaces/${workspace}/members/${username}` },
          () => services.account.setMemberRole(workspace, username, options.role),
        );
        print(`${username} is now ${membership.role} of ${workspace}`);
      }),
    );
  members
    .command('remove')
    .description('Remove a member from a team workspace (their keys for it stop working at once)')
    .argument('<workspace>', 'team workspace handle')
    .argument('<username>', 'the member to remove')
    .action((workspace: string, username: string) =>
      choose(async ({ services, print }) => {
        await services.audit.asOperator(
          'members.remove',
          { workspace, resource: `workspaces/${workspace}/members/${username}` },
          () => services.account.removeMember(workspace, username),
        );
        print(`Removed ${username} from ${workspace}`);
      }),
    );

  const keys = program.command('keys').description('Manage API keys (only the operator can create or revoke keys)');
  keys
    .command('create')
    .description(
      'Create an API key and print it (only the key, on stdout); it is shown this once, only its hash is kept',
    )
    .requiredOption('--workspace <handle>', 'the workspace the key reaches')
    .requiredOption('--name <name>', 'a name to recognise the key by (1-100 characters)')
    .option('--user <username>', "a member whose role the key carries (default: the workspace owner's)")
    .action((options: { workspace: string; name: string; user?: string }) =>
      choose(async ({ services, print, note }) => {
        const { key, record } = await services.audit.asOperator(
          'keys.create',
          { workspace: options.workspace, resource: 'api-keys' },
          () => services.apiKeys.create(options.workspace, options.name, options.user),
          (created) => ({ workspace: options.workspace, resource: `api-keys/${created.record.id}` }),
        );
        print(key);
        note(
          `Created API key ${record.prefix} "${record.name}" for workspace ${options.workspace}; store it now, it is not shown again.`,
        );
      }),
    );
  keys
    .command('list')
    .description('List API keys: prefix, workspace, user, name, created, last used (never the keys themselves)')
    .option('--workspace <handle>', 'only the keys of this workspace')
    .action((options: { workspace?: string }) =>
      choose(async ({ services, print }) => {
        if (options.workspace) await services.account.findWorkspace(options.workspace);
        const records = await services.apiKeys.listAll(options.workspace);
        if (records.length === 0) {
          print(options.workspace ? `No API keys in ${options.workspace}` : 'No API keys');
          return;
        }
        print(table(['PREFIX', 'WORKSPACE', 'USER', 'NAME', 'CREATED', 'LAST USED'], keyRows(records)));
      }),
    );
  keys
    .command('revoke')
    .description('Revoke an API key by its display prefix; every running control plane rejects it at once')
    .argument('<prefix>', 'the 11-character display prefix, e.g. ul_1a2b3c4d')
    .option('--workspace <handle>', 'the workspace of the key, when two keys share a prefix')
    .action((prefix: string, options: { workspace?: string }) =>
      choose(async ({ services, print }) => {
        const record = await services.audit.asOperator(
          'keys.revoke',
          { workspace: options.workspace, resource: 'api-keys' },
          () => services.apiKeys.revoke(prefix, options.workspace),
          (revoked) => ({ workspace: revoked.workspace.handle, resource: `api-keys/${revoked.id}` }),
        );
        print(`Revoked API key ${record.prefix} "${record.name}" of workspace ${record.workspace.handle}`);
      }),
    );

  const hosts = program.command('hosts').description('Manage GPU hosts and their worker keys');
  hosts
    .command('connect')
    .description(
      'Connect a host and print its one-time enrollment token (single use, 10 minutes) for `vp-worker enroll`',
    )
    .argument('<name>', 'host name: 1-63 lowercase letters, digits or hyphens, unique within its workspace or the pool')
    .option('--workspace <handle>', 'make the host private to this workspace (default: the appliance-wide pool)')
    .option('--region <id>', 'the deployment region it serves, e.g. us-central1 (default: every region)')
    .action((name: string, options: { workspace?: string; region?: string }) =>
      choose(async ({ services, print, note }) => {
        const enrollment = await services.audit.asOperator(
          'hosts.connect',
          { workspace: options.workspace, resource: `hosts/${name}` },
          () => services.hosts.connect(name, options.workspace, options.region),
        );
        note(
          `Connected host ${name} ${options.workspace ? `to workspace ${options.workspace}` : 'to the appliance-wide pool'}.`,
        );
        printEnrollment(print, note, enrollment, false);
      }),
    );
  hosts
    .command('rotate')
    .description(
      'Print a new enrollment token for a host, its agent connected or not; its current worker key works until the new token is enrolled, then is revoked',
    )
    .argument('<name>', 'the host')
    .option('--workspace <handle>', 'the workspace of the host, when several hosts share the name')
    .action((name: string, options: { workspace?: string }) =>
      choose(async ({ services, print, note }) => {
        const enrollment = await services.audit.asOperator(
          'hosts.rotate',
          { workspace: options.workspace, resource: `hosts/${name}` },
          () => services.hosts.rotate(name, options.workspace),
          (rotated) => ({ workspace: rotated.workspace ?? undefined, resource: `hosts/${name}` }),
        );
        printEnrollment(print, note, enrollment, true);
      }),
    );
  hosts
    .command('disconnect')
    .description('Revoke a host’s worker key at once and remove the host')
    .argument('<name>', 'the host')
    .option('--workspace <handle>', 'the workspace of the host, when several hosts share the name')
    .action((name: string, options: { workspace?: string }) =>
      choose(async ({ services, print }) => {
        const host = await services.audit.asOperator(
          'hosts.disconnect',
          { workspace: options.workspace, resource: `hosts/${name}` },
          () => services.hosts.disconnect(name, options.workspace),
          (removed) => ({ workspace: removed.workspace?.handle, resource: `hosts/${name}` }),
        );
        print(
          `Disconnected host ${host.name}${host.workspace ? ` of workspace ${host.workspace.handle}` : ''}; its worker key is revoked`,
        );
      }),
    );
  hosts
    .command('list')
    .description(
      "List hosts: name, workspace, state, last heartbeat, hardware summary, its agent's version, the model formats it exports to, running jobs",
    )
    .option('--workspace <handle>', 'only the hosts private to this workspace')
    .action((options: { workspace?: string }) =>
      choose(async ({ services, print }) => {
        const records = await services.hosts.listAll(options.workspace);
        if (records.length === 0) {
          print(options.workspace ? `No hosts in ${options.workspace}` : 'No hosts');
          return;
        }
        const running = await services.hosts.runningJobIds(records);
        print(
          table(
            ['NAME', 'WORKSPACE', 'STATE', 'LAST HEARTBEAT', 'HARDWARE', 'AGENT', 'EXPORTERS', 'RUNNING JOBS'],
            hostRows(records, running),
          ),
        );
      }),
    );

  const credits = program
    .command('credits')
    .description("Manage workspaces' credit (what training jobs are charged to)");
  credits
    .command('grant')
    .description('Add credit to a workspace; a negative amount is a correction (an adjustment) and needs --note')
    .argument('<workspace>', 'workspace handle (personal or team)')
    .argument('<amount>', 'US dollars, e.g. 25 or 12.50; negative (e.g. -5) to take credit back')
    .option('--note <text>', 'why: shown as the transaction description (default "Credit grant")')
    .action((workspace: string, amount: string, options: { note?: string }) =>
      choose(async ({ services, print }) => {
        const cents = dollarsToCents(amount);
        const granted = await services.audit.asOperator(
          'credits.grant',
          { workspace, resource: `workspaces/${workspace}/credits` },
          () => services.billing.grant(workspace, cents, options.note),
        );
        const what =
          granted.kind === 'grant'
            ? `Granted ${formatCents(granted.amountCents)} to ${workspace}`
            : `Adjusted ${workspace} by ${formatCents(granted.amountCents)}`;
        print(`${what}; balance ${formatCents(granted.balanceCents)}`);
      }),
    );
  credits
    .command('balance')
    .description("Print a workspace's credit balance")
    .argument('<workspace>', 'workspace handle')
    .action((workspace: string) =>
      choose(async ({ services, print }) => {
        const { balanceCents } = await services.billing.statement(workspace, 1);
        print(
          `${workspace}: ${formatCents(balanceCents)}${services.billing.enabled ? '' : ' (billing is off: BILLING_ENABLED=false)'}`,
        );
      }),
    );
  credits
    .command('list')
    .description("List a workspace's credit transactions, newest first: when, kind, amount, job, description")
    .argument('<workspace>', 'workspace handle')
    .option('--limit <count>', 'how many (1-200)', '20')
    .action((workspace: string, options: { limit: string }) =>
      choose(async ({ services, print }) => {
        const limit = Number(options.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 200)
          throw Invalid('--limit: must be a whole number from 1 to 200');
        const { balanceCents, transactions } = await services.billing.statement(workspace, limit);
        if (transactions.length === 0) print(`No credit transactions in ${workspace}`);
        else {
          const rows = transactions.map((tx) => [
            tx.createdAt.replace(/\.\d{3}Z$/, 'Z'),
            tx.kind,
            formatCents(tx.amountCents),
            tx.jobId ?? '-',
            tx.description,
          ]);
          print(table(['CREATED', 'KIND', 'AMOUNT', 'JOB', 'DESCRIPTION'], rows));
        }
        print(`Balance: ${formatCents(balanceCents)}`);
      }),
    );

  const audit = program.command('audit').description('The audit log: changes, sign-ins and these commands');
  audit
    .command('export')
    .description(
      'Print audit log entries as JSON lines on stdout, oldest first (every workspace and the appliance’s own, or one workspace); streamed, never the whole log in memory',
    )
    .option('--workspace <handle>', "only this workspace's entries")
    .option('--since <time>', 'only entries at or after this ISO 8601 date or date-time, e.g. 2026-01-31T00:00:00Z')
    .action((options: { workspace?: string; since?: string }) =>
      choose(async ({ services, note, stream }) => {
        const since = options.since === undefined ? undefined : new Date(options.since);
        if (since && (!/^\d{4}-\d{2}-\d{2}/.test(options.since!) || !(since.getTime() >= 0)))
          throw Invalid('--since: must be an ISO 8601 date or date-time from 1970 on');
        const count = await services.audit.exportLines({ workspace: options.workspace, since }, stream);
        note(`Exported ${count} audit entr${count === 1 ? 'y' : 'ies'}`);
      }),
    );

  const integrations = program.command('integrations').description("Manage storage integrations' saved credentials");
  integrations
    .command('reseal')
    .description(
      "After the appliance secret (SIGNING_SECRET, or DATA_DIR/signing-secret) changed: encrypt the saved storage credentials and deployments' server tokens again under the new one, reading them with the previous one",
    )
    .requiredOption(
      '--previous-secret-file <file>',
      'a file holding the previous secret (give the option again for older ones)',
      (file: string, files: string[] | undefined) => [...(files ?? []), file],
    )
    .action((options: { previousSecretFile: string[] }) =>
      choose(async ({ services, orm, print }) => {
        const previous = options.previousSecretFile.map((file) => readFileSync(file, 'utf8').trim());
        const { resealed, unreadable } = await services.integrations.reseal(previous);
        print(`Re-sealed ${resealed} integration${resealed === 1 ? '' : 's'} under the current secret`);
        const tokens = await resealTokens(orm.em.fork() as EntityManager, previous);
        if (tokens.resealed > 0)
          print(
            `Re-sealed ${tokens.resealed} deployment revision token${tokens.resealed === 1 ? '' : 's'} under the current secret`,
          );
        if (unreadable.length > 0)
          throw Invalid(
            `${unreadable.length} integration(s) no given secret opens (connect them again): ${unreadable.join(', ')}`,
          );
        if (tokens.unreadable.length > 0) {
          throw Invalid(
            `${tokens.unreadable.length} deployment revision token(s) no given secret opens (stop and start their deployments): ${tokens.unreadable.join(', ')}`,
          );
        }
      }),
    );

  const listed = (verb: string, names: string[]) =>
    `${verb} ${names.length} migration${names.length === 1 ? '' : 's'}:\n${names.map((name) => `  ${name}`).join('\n')}`;
  program
    .command('backup')
    .description(
      'Back up the database (one consistent snapshot, as it is) and the stored objects it uses into a new folder (mode 0700, files 0600), authenticated with the backup key; progress on stderr',
    )
    .argument('<dir>', 'a new or empty folder')
    .option(
      '--key-file <file>',
      'the backup key (created there if absent; default: backup-key in DATA_DIR); keep it apart from the backups',
    )
    .action((dir: string, options: { keyFile?: string }) => operate(backupCommand(dir, options.keyFile)));
  program
    .command('restore')
    .description(
      'Restore a backup into a new, empty install (its control plane not started yet), then apply the migrations this version adds',
    )
    .argument('<dir>', 'the folder `vpctl backup` wrote')
    .option(
      '--key-file <file>',
      'the backup key it was made with (default: backup-key in DATA_DIR); a backup it does not authenticate is refused',
    )
    .action((dir: string, options: { keyFile?: string }) => operate(restoreCommand(dir, options.keyFile)));
  program
    .command('doctor')
    .description(
      "Check the install: database, migrations, clock, signing secret and replicas, storage, GPU hosts and their agents' versions, disk space (exit 1 on a FAIL)",
    )
    .action(() => operate(doctorCommand));

  program
    .command('migrate')
    .description('Apply pending database migrations (every command, and the server at start, does this too)')
    .option(
      '--down-to <migration>',
      'revert the migrations applied after this one (a rollback to the release whose last migration it is); run it with the appliance stopped',
    )
    .action((options: { downTo?: string }) =>
      choose(async ({ orm, applied, print }) => {
        if (options.downTo !== undefined) {
          const reverted = await migrateDown(orm, options.downTo);
          print(
            reverted.length === 0
              ? `Nothing to revert: ${options.downTo} is the last applied migration`
              : listed('Reverted', reverted),
          );
        } else if (applied.length === 0) print('Database schema is up to date');
        else print(listed('Applied', applied));
      }),
    );

  return program;
}

function write(stream: NodeJS.WriteStream, text: string): Promise<void> {
  return new Promise((resolve) => stream.write(text, () => resolve()));
}

/** Runs one vpctl invocation and returns its exit status. */
async function main(argv: string[]): Promise<number> {
  let chosen: Operation | undefined;
  try {
    await buildProgram(
      (action) => (chosen = servicesCommand(action)),
      (operation) => (chosen = operation),
    ).parseAsync(argv);
  } catch (error) {
    // Commander has already printed the problem (or the help) on stderr.
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : EXIT_USAGE;
    throw error;
  }
  if (!chosen) return EXIT_USAGE;
  const operation: Operation = chosen;

  const output: string[] = [];
  const notes: string[] = [];
  const print = (text: string) => output.push(`${text}\n`);
  const flush = async () => {
    if (output.length) await write(process.stdout, output.join(''));
    if (notes.length) await write(process.stderr, notes.join(''));
  };
  let config: AppConfig;
  try {
    config = loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    if (!operation.badConfig) {
      await write(process.stderr, `vpctl: ${error.message}\n`);
      return EXIT_CONFIG;
    }
    const status = operation.badConfig(error.message, print);
    await flush();
    return status;
  }
  const log: Logger = pino({ level: 'warn', base: { service: 'vpctl' } }, pino.destination({ fd: 2, sync: true }));

  let status: number;
  try {
    status = await operation.run({
      config,
      log,
      print,
      note: (text) => notes.push(`${text}\n`),
      progress: (text) => process.stderr.write(`${text}\n`),
    });
  } catch (error) {
    output.length = 0;
    notes.length = 0;
    if (error instanceof HttpError) {
      notes.push(`vpctl: ${error.message}\n`);
    } else {
      log.error({ err: error }, 'unexpected error');
      notes.push(`vpctl: ${error instanceof Error ? error.message : String(error)}\n`);
    }
    status = EXIT_FAILED;
  }
  await flush();
  return status;
}

/** Most commands: the control plane's services on the database, migrated first. */
function servicesCommand(action: Action): Operation {
  return {
    run: ({ config, log, print, note }) =>
      withDatabase(config, log, 'apply', async ({ orm, applied }) => {
        const stream = (text: string) => write(process.stdout, text);
        await action({ services: new Services(orm.em.fork(), { config }), orm, applied, print, note, stream });
        return 0;
      }),
  };
}

process.exit(await main(process.argv));
