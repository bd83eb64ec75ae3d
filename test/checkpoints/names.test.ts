/** What names say (src/checkpoints/names.ts). */
import { isCheckpointFileName, isCheckpointTempName, isHousekeepingName, isTempName, isTorchFileName, stepFromName } from '../../src/checkpoints/names';

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

describe('isCheckpointFileName: only these are read, reported and pruned', () => {
  it.each(['ckpt_00000120.pt', 'model.pt', 'pytorch_model.bin', 'step_7.safetensors', 'weights.h5', 'resnet.pth.tar', 'step-40', 'ckpt.120', 'global_step7', 'run2-step-0', 'ckpt_00000003.state', 'epoch=3'])('%s is', (n) => {
    expect(isCheckpointFileName(n)).toBe(true);
  });
  it.each(['notes', 'report.pdf', 'model-final', 'todo', 'latest', 'thesis2024.docx', 'progress_999.txt', 'step_1.json', 'train.log', 'ckpt'])('%s is not', (n) => {
    expect(isCheckpointFileName(n)).toBe(false);
  });
});

describe('isCheckpointTempName: a temporary name that is a checkpoint being written', () => {
  it.each(['ckpt_1.pt.tmp', '.ckpt_00000060.pt.XyZ12', 'tmp_step-3', 'step-80.tmp', 'ckpt_00000080.partial', 'tmpab12cd34.pt'])('%s is', (n) => {
    expect(isCheckpointTempName(n)).toBe(true);
  });
  it.each(['.bashrc', '.profile', 'x.tmp', 'video.partial', 'tmpab12cd34', '.tmp', 'tmp'])('%s is not', (n) => {
    expect(isCheckpointTempName(n)).toBe(false);
  });
});
