// npm run bench: every benchmark of the product, one JSON line each.
import { benchEngine } from './engine.mjs';

await benchEngine();
