// DATABASE_CA_FILE end to end at the wire: a stand-in PostgreSQL that answers the SSLRequest,
// completes TLS with a certificate signed by a test CA, and tells which way it was reached.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, pgPoolConfig, sqlOf } from './index.js';

const SSL_REQUEST = 80877103;
let dir: string;
let server: Server;
let port: number;
let ca: string;
let otherCa: string;

/** A PostgreSQL ErrorResponse: what the client reports as the connection's failure. */
function errorResponse(message: string): Buffer {
  const fields = Buffer.from(`SFATAL\0C28000\0M${message}\0\0`);
  const head = Buffer.alloc(5);
  head.write('E');
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

function openssl(...args: string[]) {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'po-db-tls-'));
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', '/CN=po-test-ca', '-days', '1');
  openssl('req', '-x509', ...ec, '-keyout', 'other.key', '-out', 'other.crt', '-subj', '/CN=po-other-ca', '-days', '1');
  openssl('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=DNS:localhost\n');
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.crt', '-days', '1', '-extfile', 'san.ext');
  ca = readFileSync(join(dir, 'ca.crt'), 'utf8');
  otherCa = readFileSync(join(dir, 'other.crt'), 'utf8');
  const key = readFileSync(join(dir, 'server.key'));
  const cert = readFileSync(join(dir, 'server.crt'));

  server = createServer((socket) => {
    socket.on('error', () => undefined);
    socket.once('data', (first) => {
      if (first.length !== 8 || first.readInt32BE(4) !== SSL_REQUEST) return void socket.end(errorResponse('reached in plain text'));
      socket.write('S');
      const tls = new TLSSocket(socket, { isServer: true, key, cert });
      tls.on('error', () => undefined);
      tls.once('data', () => tls.end(errorResponse('reached over TLS')));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** Connects through createDb's own pool (what Prisma and the plain statements share). */
async function connectWith(url: string, dbCa: string | null): Promise<string> {
  const db = createDb(url, { max: 1, ca: dbCa });
  try {
    const client = await sqlOf(db).pool.connect();
    client.release();
    return 'connected';
  } catch (err) {
    return (err as Error).message;
  } finally {
    await db.$disconnect();
  }
}

describe('TLS to PostgreSQL with DATABASE_CA_FILE', () => {
  it('turns TLS on with verification against the given CA, whatever sslmode says', () => {
    for (const url of ['postgresql://po@db/po', 'postgresql://po@db/po?sslmode=disable', 'postgresql://po@db/po?sslmode=require']) {
      expect(pgPoolConfig(url, ca).ssl).toEqual({ ca, rejectUnauthorized: true });
    }
    expect(pgPoolConfig('postgresql://po@db/po?sslmode=require').ssl).toEqual({ rejectUnauthorized: false });
    expect(pgPoolConfig('postgresql://po@db/po').ssl).toBeUndefined();
  });

  it('reaches a server whose certificate that CA signed, over TLS', async () => {
    expect(await connectWith(`postgresql://po@localhost:${port}/po`, ca)).toBe('reached over TLS');
    expect(await connectWith(`postgresql://po@localhost:${port}/po?sslmode=disable`, ca)).toBe('reached over TLS');
  });

  it('refuses a server whose certificate another CA signed, or that names another host', async () => {
    expect(await connectWith(`postgresql://po@localhost:${port}/po`, otherCa)).toMatch(/self[- ]signed|unable to (verify|get)/i);
    expect(await connectWith(`postgresql://po@127.0.0.1:${port}/po`, ca)).toMatch(/IP: 127\.0\.0\.1 is not in the cert's list|does not match/i);
  });

  it('without a CA file the URL alone decides (here: plain text)', async () => {
    expect(await connectWith(`postgresql://po@localhost:${port}/po`, null)).toBe('reached in plain text');
  });
});
