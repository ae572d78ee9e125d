#!/bin/bash
# A Slurm prolog (slurm.conf: Prolog=/etc/slurm/prolog.d/rangefetch.sh) that makes sure every
# node has rangefetch before a job starts, from the package scripts/package.sh built and put on
# the cluster's shared file system. Nodes need no Swift: the binary carries its runtime.
#
#   scripts/package.sh && cp dist/rangefetch_*_amd64.deb /shared/packages/
#
# Without root on the nodes, unpack the tarball instead and point the array job at it:
#   tar -C /shared/opt/rangefetch -xzf dist/rangefetch-0.1.0-linux-amd64.tar.gz
#   sbatch --export=ALL,RANGEFETCH=/shared/opt/rangefetch/usr/bin/rangefetch,... slurm-array.sbatch
set -euo pipefail
package=$(ls /shared/packages/rangefetch_*_amd64.deb 2>/dev/null | sort -V | tail -n 1)
[ -n "$package" ] || exit 0   # nothing published yet: jobs that need it fail with a clear message
wanted=$(dpkg-deb -f "$package" Version)
installed=$(dpkg-query -W -f='${Version}' rangefetch 2>/dev/null || true)
if [ "$installed" != "$wanted" ]; then
    # flock: several jobs starting on one node install it once.
    flock /var/lock/rangefetch-install apt-get install -y -qq "$package" >/dev/null
fi
