/** What names say (src/checkpoints/names.ts). */
import { isHousekeepingName, isTempName, isTorchFileName, stepFromName } from '../../src/checkpoints/names';

describe('stepFromName', () => {
  it.each([
    ['ckpt_00000120.pt', 120],
    ['step-40', 40],
    ['ckpt_00000120.pt.tmp', 120],
    ['global_step7.partial', 7],
    ['epoch3_step250.pth', 250],
    ['ckpt.120', 120],
    ['model.pt', null],
    ['weights.h5', null],
    ['latest', null],
    ['run2-step-0', 0],
    ['x99999999999999999999', null],
  ])('%s → %p', (name, step) => {
    expect(stepFromName(name)).toBe(step);
  });
});

describe('isTempName', () => {
  it.each(['ckpt_1.pt.tmp', 'a.partial', 'b.incomplete', '.ckpt_1.pt', 'tmpab12', 'tmp_step-3'])('%s is temporary', (n) => {
    expect(isTempName(n)).toBe(true);
  });
  it.each(['ckpt_1.pt', 'step-40', 'attempt.pt', 'model.tmpl'])('%s is not', (n) => {
    expect(isTempName(n)).toBe(false);
  });
});

it('knows torch.save extensions and housekeeping names', () => {
  expect(['a.pt', 'a.PTH', 'a.ckpt', 'pytorch_model.bin'].map(isTorchFileName)).toEqual([true, true, true, true]);
  expect(['a.safetensors', 'a', '.pt'].map(isTorchFileName)).toEqual([false, false, false]);
  expect(['.nfs000123', '.DS_Store', '.gitkeep'].map(isHousekeepingName)).toEqual([true, true, true]);
  expect(['.ckpt.pt', 'nfs'].map(isHousekeepingName)).toEqual([false, false]);
});
