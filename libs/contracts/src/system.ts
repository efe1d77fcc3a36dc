// System endpoints: GET /version and the legacy POST /logs (addendum §5.7, §16).
import {
  arrayOf,
  dateTime,
  enumOf,
  id,
  int,
  MAX_ID,
  named,
  nullable,
  ref,
  response,
  str,
  utcDateTime,
} from './fragments.js';
import { limits } from './limits.js';
// Registers PipelineKeywordInput, which the log request refers to.
import './pipelines.js';
import type { PipelineKeywordInput } from './pipelines.js';
import { compile, registerSchemas } from './validate.js';
import type { Validator } from './validate.js';

/** The interface release; a VersionInfo `version` has this SemVer core. */
export const API_VERSION = '0.5.0';

export const LICENSE_TIERS = ['community'] as const;
export type LicenseTier = (typeof LICENSE_TIERS)[number];

export interface VersionInfo {
  /** SemVer with core 0.5.0, e.g. `0.5.0` or `0.5.0-dev+abc123`. */
  version: string;
  licenseTier: LicenseTier;
  commit: string | null;
  builtAt: string | null;
}

export interface LogRequest {
  /** 1..65536 UTF-8 bytes. */
  message: string;
  /** 1..32 characters, default "Information". */
  logLevel?: string;
  apiKey?: string;
  pipelineId?: number;
  stageId?: number;
  keywords?: PipelineKeywordInput[];
  /** RFC 3339 with an offset; default now. */
  created?: string;
}

export interface LogResponse {
  id: number;
  applicationId: number | null;
  stored: true;
}

const IDENT = '[0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*';
const VERSION_PATTERN = `^${API_VERSION.replace(/\./g, '\\.')}(?:-${IDENT})?(?:\\+${IDENT})?$`;

export const versionInfoSchema = response('VersionInfo', {
  version: { type: 'string', pattern: VERSION_PATTERN },
  licenseTier: enumOf(LICENSE_TIERS),
  commit: nullable(str()),
  builtAt: nullable(utcDateTime()),
});

export const logRequestSchema = named(
  'LogRequest',
  {
    message: str({ minLength: 1, maxBytes: limits.logMessageBytes }),
    logLevel: { ...str({ minLength: 1, maxLength: limits.logLevelChars }), default: 'Information' },
    apiKey: {
      ...str({ description: 'attaches the log to an application when it matches' }),
      writeOnly: true,
    },
    pipelineId: id('stored as given, not checked'),
    stageId: id('stored as given, not checked'),
    keywords: arrayOf(ref('PipelineKeywordInput'), { maxItems: limits.logKeywords }),
    created: dateTime('default now'),
  },
  { required: ['message'] },
);

export const logResponseSchema = response('LogResponse', {
  id: int(1, MAX_ID),
  applicationId: nullable(int(1, MAX_ID)),
  stored: { type: 'boolean', const: true },
});

registerSchemas(versionInfoSchema, logRequestSchema, logResponseSchema);

export const validateLogRequest: Validator<LogRequest> = compile(logRequestSchema);
