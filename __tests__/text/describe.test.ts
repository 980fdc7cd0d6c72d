/**
 * describeThrown: any value a foreign party throws becomes text, and describing it never throws —
 * including the values whose String() throws (an object without a prototype, a throwing toString,
 * a symbol in a template, a proxy whose traps throw).
 */
import { describe, it, expect } from '@jest/globals';
import { describeThrown, isInstance, MAX_DESCRIBED_CHARS } from '../../src/text/describe.js';

const throwingProxy = new Proxy(
  {},
  {
    get() {
      throw new Error('trap');
    },
    getPrototypeOf() {
      throw new Error('trap');
    },
    ownKeys() {
      throw new Error('trap');
    },
  },
);

describe('describeThrown', () => {
  it('says what an error, a string, a number, null and undefined are', () => {
    expect(describeThrown(new Error('disk full'))).toBe('disk full');
    expect(describeThrown('plain text')).toBe('plain text');
    expect(describeThrown(42)).toBe('42');
    expect(describeThrown(10n)).toBe('10');
    expect(describeThrown(null)).toBe('null');
    expect(describeThrown(undefined)).toBe('undefined');
  });

  it('reads an error-like object from another realm by its message, a plain object by its JSON', () => {
    expect(describeThrown({ message: 'from a vm context' })).toBe('from a vm context');
    expect(describeThrown({ code: 42 })).toBe('{"code":42}');
    expect(
      describeThrown(
        new (class Custom {
          toString = () => 'custom text';
        })(),
      ),
    ).toBe('custom text');
  });

  it('never throws for values whose String() throws', () => {
    expect(() => String(Object.create(null))).toThrow();
    expect(describeThrown(Object.create(null))).toBe('an object without a text form');
    const badToString = {
      toString() {
        throw new Error('no');
      },
    };
    expect(describeThrown(badToString)).toBe('an object without a text form');
    expect(describeThrown(Symbol('boom'))).toBe('the symbol boom');
    expect(describeThrown(Symbol())).toBe('the symbol (without description)');
    expect(describeThrown(throwingProxy)).toBe('an object without a text form');
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(describeThrown(cyclic)).toBe('an object without a text form');
    expect(describeThrown(() => 1)).toBe('a function');
  });

  it(`keeps at most MAX_DESCRIBED_CHARS (${MAX_DESCRIBED_CHARS}) characters`, () => {
    const long = describeThrown(new Error('x'.repeat(MAX_DESCRIBED_CHARS * 2)));
    expect(long).toBe(`${'x'.repeat(MAX_DESCRIBED_CHARS)}...`);
  });

  it('isInstance answers false, not a throw, for a proxy whose getPrototypeOf trap throws', () => {
    expect(() => throwingProxy instanceof Error).toThrow('trap');
    expect(isInstance(throwingProxy, Error)).toBe(false);
    expect(isInstance(new TypeError('x'), Error)).toBe(true);
    expect(isInstance(Object.create(null), Error)).toBe(false);
  });
});
