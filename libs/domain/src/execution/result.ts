import { limits } from '@po/contracts';
import type { ContextItem, ContextItemInput } from '@po/contracts';
import type { ResultEvent } from './transitions.js';

/** A live pipeline context item: the response ContextItem without `isDeleted` (never true for a live one). */
export type ContextEntry = Omit<ContextItem, 'isDeleted'>;

/** A context item in a worker result (api-spec ContextItem, as validated). */
export type ContextUpdate = ContextItemInput;

/** At most this many context items per pipeline (§13). */
export const MAX_CONTEXT_ITEMS: number = limits.contextItems;

/**
 * §7/§13: the stage event an applied result is. isWaitingForApproval=true parks the stage whatever
 * isSuccess says; otherwise isSuccess completes it; anything else is a failure.
 */
export function resultEvent(result: { isSuccess: boolean; isWaitingForApproval?: boolean }): ResultEvent {
  if (result.isWaitingForApproval === true) return 'park';
  return result.isSuccess ? 'result-success' : 'result-failure';
}

const TRANSITION_NAMES = { park: 'park', 'result-success': 'complete', 'result-failure': 'fail' } as const;

/** resultEvent under the names the engine switches on. */
export function resultTransition(result: { isSuccess: boolean; isWaitingForApproval?: boolean }): 'park' | 'complete' | 'fail' {
  return TRANSITION_NAMES[resultEvent(result)];
}

/**
 * §13 context updates, applied in order: isDeleted=true removes the key (its value is ignored);
 * otherwise the item is upserted by key. An upsert replaces the item with the update's fields and
 * their api-spec defaults (value "", valueType null, isSensitive false), except that a sensitive
 * key stays sensitive unless the update says isSensitive=false (decision 0009), and keeps an
 * existing key's position; a new key goes at the end. A new key that would take the total beyond
 * `max` is dropped and reported (each dropped key once, in order); updates to existing keys and
 * deletions are never dropped. A key dropped earlier in the batch but
 * added later (after a deletion made room) is not reported.
 */
export function mergeContext(
  current: readonly ContextEntry[],
  updates: readonly ContextUpdate[],
  max = MAX_CONTEXT_ITEMS,
): { items: ContextEntry[]; dropped: string[] } {
  const items = new Map<string, ContextEntry>(current.map((e) => [e.key, { ...e }]));
  const dropped: string[] = [];
  for (const u of updates) {
    if (u.isDeleted === true) {
      items.delete(u.key);
      continue;
    }
    const entry: ContextEntry = {
      key: u.key,
      value: u.value ?? '',
      valueType: u.valueType ?? null,
      isSensitive: u.isSensitive ?? items.get(u.key)?.isSensitive ?? false,
    };
    if (items.has(u.key) || items.size < max) {
      items.set(u.key, entry);
      if (dropped.includes(u.key)) dropped.splice(dropped.indexOf(u.key), 1);
    } else if (!dropped.includes(u.key)) {
      dropped.push(u.key);
    }
  }
  return { items: [...items.values()], dropped };
}
