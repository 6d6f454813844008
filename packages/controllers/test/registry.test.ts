import { describe, expect, it } from 'vitest';
import { CONTROLLERS, CONTROLLER_NAMES, ControllerOptionsError, isControllerName, isControllerOptionsError } from '../src/index.ts';

describe('controller registry', () => {
  it('should register every name with a factory that builds a controller', () => {
    expect(Object.keys(CONTROLLERS).sort()).toEqual([...CONTROLLER_NAMES].sort());
    for (const name of CONTROLLER_NAMES) {
      const c = CONTROLLERS[name]({});
      expect(typeof c.name).toBe('string');
      expect(typeof c.create).toBe('function');
    }
  });

  it('should tell registered names from others', () => {
    expect(isControllerName('npl:faulty')).toBe(true);
    expect(isControllerName('npl')).toBe(false);
  });

  it('should refuse an unknown option with a typed error naming the controller and the field', () => {
    let err: unknown;
    try {
      CONTROLLERS['npl:fixed']({ portRangeStrat: 61000 });
    } catch (e) {
      err = e;
    }
    expect(isControllerOptionsError(err)).toBe(true);
    expect(err).toBeInstanceOf(ControllerOptionsError);
    expect((err as ControllerOptionsError).field).toBe('portRangeStrat');
    expect((err as Error).message).toBe('controller npl:fixed: option "portRangeStrat" is not an option of this controller (options: portRangeEnd, portRangeStart, workers)');
  });

  it('should refuse an option of the wrong type or out of range', () => {
    expect(() => CONTROLLERS['npl:faulty']({ portRangeStart: 'x' })).toThrow('controller npl:faulty: option "portRangeStart" must be an integer from 1 to 65535, got "x"');
    expect(() => CONTROLLERS['npl:faulty']({ portRangeStart: 62000, portRangeEnd: 61000 })).toThrow('option "portRangeEnd" must be an integer from 62000 to 65535, got 61000');
  });
});
