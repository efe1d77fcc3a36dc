#!/usr/bin/env node
// The `po` executable: a committed file, so `npm install` can link it before the first build.
import '../dist/main.js';
