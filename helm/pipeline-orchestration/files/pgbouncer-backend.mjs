// PgBouncer's server and credentials, from the release's database URL Secrets (decision 0114). The
// init container of templates/pgbouncer.yaml runs it with the release's image before PgBouncer
// starts: the chart only ever references Secrets holding full URLs, and pgbouncer.ini cannot read
// a URL. What PgBouncer needs of them goes into a memory-backed volume, readable by this user only,
// so no password sits in a ConfigMap, in PgBouncer's environment or in a log line:
//   server.ini    server_tls_sslmode from the direct URL's sslmode (included in [pgbouncer]: a
//                 second [pgbouncer] header would reset every setting before it to its default)
//   databases.ini the services' database name -> the server's host, port, dbname and user
//                 (DATABASE_DIRECT_URL), included under [databases]
//   userlist.txt  how the services log in to PgBouncer (DATABASE_URL's user and password) and, for
//                 another user, how PgBouncer logs in to PostgreSQL
// A services' URL that would bypass PgBouncer, lacks pgbouncer=true (the services would then use
// session features through a transaction pooler) or asks for TLS (PgBouncer serves none to the
// pods) is refused here, where the operator sees it first. Messages name the setting, never a value.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const env = process.env;
const OUT = env.PGBOUNCER_BACKEND_DIR || '/etc/pgbouncer-backend';
const SYSTEM_CA = env.PGBOUNCER_SYSTEM_CA || '/etc/ssl/certs/ca-certificates.crt';
const SERVER_SSLMODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'];
// pgbouncer.ini takes these unquoted; anything else would need quoting rules that differ by field.
const NAME = /^[A-Za-z0-9_.-]+$/;
const USER = /^[A-Za-z0-9_.@-]+$/;
const HOST = /^[A-Za-z0-9_.:-]+$/;

const problems = [];

/** A PostgreSQL URL as the services read it (libs/db pgPoolConfig): the same defaults. */
function parse(name, text) {
  let u;
  try {
    u = new URL(text ?? '');
  } catch {
    problems.push(`${name} is not a URL`);
    return null;
  }
  if (u.protocol !== 'postgresql:' && u.protocol !== 'postgres:') {
    problems.push(`${name} must be a postgresql URL`);
    return null;
  }
  return {
    host: decodeURIComponent(u.hostname).replace(/^\[(.*)\]$/, '$1'),
    port: u.port ? Number(u.port) : 5432,
    user: decodeURIComponent(u.username) || 'postgres',
    password: u.password ? decodeURIComponent(u.password) : null,
    database: decodeURIComponent(u.pathname.slice(1)) || 'postgres',
    params: u.searchParams,
  };
}

function need(ok, message) {
  if (!ok) problems.push(message);
}

const client = parse('DATABASE_URL (database.urlSecret)', env.DATABASE_URL);
const server = parse('DATABASE_DIRECT_URL (database.directUrlSecret)', env.DATABASE_DIRECT_URL);

if (client) {
  const service = env.PGBOUNCER_SERVICE;
  const namespace = env.PGBOUNCER_NAMESPACE;
  const viaService = client.host === service || client.host === `${service}.${namespace}` || client.host.startsWith(`${service}.${namespace}.svc`);
  need(viaService, `DATABASE_URL (database.urlSecret) must name the PgBouncer Service ${service} as its host, or the services bypass PgBouncer`);
  need(client.port === Number(env.PGBOUNCER_PORT), `DATABASE_URL (database.urlSecret) must use port ${env.PGBOUNCER_PORT} (pgbouncer.port)`);
  need(client.params.get('pgbouncer') === 'true', 'DATABASE_URL (database.urlSecret) must carry ?pgbouncer=true: the services then keep to what a transaction-mode pooler supports');
  const tls = client.params.get('sslmode');
  need(!tls || ['disable', 'allow', 'prefer'].includes(tls), 'DATABASE_URL (database.urlSecret): PgBouncer serves no TLS to the pods; drop sslmode (the direct URL\'s sslmode applies between PgBouncer and PostgreSQL)');
  need(client.password !== null, 'DATABASE_URL (database.urlSecret) must carry a password: PgBouncer authenticates the services with it (scram-sha-256)');
  need(NAME.test(client.database), 'DATABASE_URL (database.urlSecret): the database name may only hold letters, digits, _, . and -');
  need(USER.test(client.user), 'DATABASE_URL (database.urlSecret): the user name may only hold letters, digits, _, ., @ and -');
}
if (server) {
  need(server.host !== '' && HOST.test(server.host), 'DATABASE_DIRECT_URL (database.directUrlSecret) must name a host (letters, digits, _, ., : and -)');
  need(NAME.test(server.database), 'DATABASE_DIRECT_URL (database.directUrlSecret): the database name may only hold letters, digits, _, . and -');
  need(USER.test(server.user), 'DATABASE_DIRECT_URL (database.directUrlSecret): the user name may only hold letters, digits, _, ., @ and -');
  const tls = server.params.get('sslmode');
  need(!tls || SERVER_SSLMODES.includes(tls), `DATABASE_DIRECT_URL (database.directUrlSecret): sslmode must be one of ${SERVER_SSLMODES.join(', ')}`);
}
if (client && server && client.user === server.user) {
  need(server.password === null || server.password === client.password, 'database.urlSecret and database.directUrlSecret name the same user with different passwords');
}
for (const url of [client, server]) {
  if (url?.password != null) need(!/[\r\n\0]/.test(url.password), 'a password holds a line break or NUL, which PgBouncer\'s auth file cannot carry');
}
if (problems.length > 0) {
  for (const p of problems) console.error(`pgbouncer backend: ${p}`);
  process.exit(1);
}

const quote = (value) => `"${value.replaceAll('"', '""')}"`;
const users = new Map([[client.user, client.password]]);
if (server.password !== null && !users.has(server.user)) users.set(server.user, server.password);
const userlist = [...users].map(([user, password]) => `${quote(user)} ${quote(password)}`);

const tls = server.params.get('sslmode');
const serverIni = [
  ...(tls ? [`server_tls_sslmode = ${tls}`] : []),
  ...(tls === 'verify-ca' || tls === 'verify-full' ? [`server_tls_ca_file = ${SYSTEM_CA}`] : []),
];
const databasesIni = [`${client.database} = host=${server.host} port=${server.port} dbname=${server.database} user=${server.user}`];

const write = (file, lines) => writeFileSync(join(OUT, file), lines.map((l) => `${l}\n`).join(''), { mode: 0o600 });
write('userlist.txt', userlist);
write('server.ini', serverIni);
write('databases.ini', databasesIni);
console.log(`pgbouncer backend: database ${client.database} -> ${server.host}:${server.port}/${server.database} as ${server.user}, server TLS ${tls ?? 'PgBouncer default (prefer)'}`);
