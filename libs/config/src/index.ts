export { ConfigError, envReader, loadConfig, type EnvReader } from './env.js';
export { commonConfig, databaseOptions, type CommonConfig } from './common.js';
export { describeRedis, parseHostPorts, redisConfig, type HostPort, type RedisConfig, type RedisTopology } from './redis.js';
