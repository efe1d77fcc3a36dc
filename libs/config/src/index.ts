export { ConfigError, envReader, loadConfig, type EnvReader } from './env.js';
export { commonConfig, type CommonConfig } from './common.js';
