/* TSC calibration: TSC ticks counted over ~100 ms of CLOCK_MONOTONIC, per repeat. */
#include "probe.h"

int main(int argc, char **argv) {
    int repeats;
    double scale;
    parse_args(argc, argv, &repeats, &scale);
    pin(0);
    for (int r = 0; r < repeats; r++) {
        struct sample s = start();
        uint64_t until = s.t0_ns + scaled(100000000ull, scale);
        while (now_ns() < until) COMPILER_BARRIER();
        emit("tsc", "calibration", r, 1, s, NULL);
    }
    return 0;
}
