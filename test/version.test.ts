import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { VERSION } from '../lib/version.js';
import { ROOT } from './helpers/fixtures.js';

describe('VERSION', () => {
  it("is package.json's version", () => {
    expect(VERSION).to.equal((JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string }).version);
  });
});
