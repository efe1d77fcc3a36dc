import type { Prisma, PrismaClient } from './generated/prisma/client.js';

/** The Prisma client of the product. */
export type Db = PrismaClient;
/** A client or the client of an interactive transaction (`db.$transaction(async (tx) => …)`). */
export type DbOrTx = PrismaClient | Prisma.TransactionClient;
