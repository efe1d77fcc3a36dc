export { createLogger, type Logger } from './logger.js';
