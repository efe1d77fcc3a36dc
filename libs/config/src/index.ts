export { ConfigError, envReader, loadConfig, type EnvReader } from './env.js';
export { commonConfig, databaseOptions, type CommonConfig } from './common.js';
