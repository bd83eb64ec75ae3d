import { upgradeMove } from '../../src/job/upgrade';

describe('upgradeMove', () => {
  it('between rounds a job moves as soon as another build is current', () => {
    expect(upgradeMove({ targetChanged: true, historyLong: false, roundGroups: 0 })).toBe('continue');
    expect(upgradeMove({ targetChanged: false, historyLong: false, roundGroups: 0 })).toBe('stay');
    // A long history between rounds is shouldContinueAsNew's to handle, not this.
    expect(upgradeMove({ targetChanged: false, historyLong: true, roundGroups: 0 })).toBe('stay');
  });

  it('a round the job runs itself goes along with the move; one spread over group workflows stays until it ends', () => {
    expect(upgradeMove({ targetChanged: true, historyLong: false, roundGroups: 1 })).toBe('adopt');
    expect(upgradeMove({ targetChanged: true, historyLong: false, roundGroups: 3 })).toBe('stay');
    expect(upgradeMove({ targetChanged: false, historyLong: false, roundGroups: 1 })).toBe('stay');
  });

  it('a round whose history grew long hands itself to a fresh run the same way', () => {
    expect(upgradeMove({ targetChanged: false, historyLong: true, roundGroups: 1 })).toBe('adopt');
    expect(upgradeMove({ targetChanged: false, historyLong: true, roundGroups: 2 })).toBe('stay');
  });
});
