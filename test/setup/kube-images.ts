/**
 * Images for the test cluster (test/setup/kube-cluster.ts): no registry answers here, so an image
 * is built by the private dockerd (test/setup/docker.ts), `docker save`d to a tarball, and the
 * tarball is imported into the cluster's containerd (`KubeCluster.loadImage`); pods name it with
 * `imagePullPolicy: Never`. The dockerd is stopped before this returns: only one may run on the
 * machine, and the cluster does not need it.
 */
import path from 'node:path';
import { startDocker } from './docker';
import { buildTelasticImage, TELASTIC_IMAGE } from './images';

export interface SavedImage {
  /** The tag pods use (`telastic:test`, which containerd knows as docker.io/library/telastic:test). */
  tag: string;
  tarball: string;
  buildSeconds: number;
  saveSeconds: number;
}

/** `telastic:test` built from the repository's Dockerfile and saved as `<dir>/telastic.tar`. */
export async function saveTelasticImage(dir: string): Promise<SavedImage> {
  const d = await startDocker();
  try {
    const built = await buildTelasticImage(d);
    const tarball = path.join(dir, 'telastic.tar');
    const t0 = Date.now();
    await d.must(['save', '-o', tarball, TELASTIC_IMAGE]);
    return { tag: TELASTIC_IMAGE, tarball, buildSeconds: built.seconds, saveSeconds: (Date.now() - t0) / 1000 };
  } finally {
    await d.stop();
  }
}
