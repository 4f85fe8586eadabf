"""What runs on this machine, beneath the lab: the driver process (run_job), CPUs and pinning, allocators and huge
pages, the compiler, host facts and noise sensors."""
