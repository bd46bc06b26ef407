// Package bench holds Sandbar's VM benchmarks: boot to system:ready
// against the floor of a bare kernel boot, graceful shutdown, exec round
// trips, guest→host stream throughput and the idle guest's QEMU memory,
// each measured over several real guests and reported as median, min and
// max, with a Markdown table for the README at the end.
//
// They are Go benchmarks that do their own runs (SANDBAR_BENCH_RUNS, 10 by
// default) whatever b.N is, and never pass or fail on a figure. They need
// the built image in SANDBAR_IMAGE_DIR and qemu-system-x86_64; without
// them they skip. `make bench` runs them; scripts/bench-kvm.sh packs and
// runs them on a machine with KVM and no network. There is no code here
// besides the tests.
package bench
