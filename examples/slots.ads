# Slot ads in old syntax, as `condor_status -long` prints them (blank lines separate ads).
Name = "slot1@exec001.example.org"
Machine = "exec001.example.org"
Arch = "X86_64"
OpSys = "LINUX"
Cpus = 8
Memory = 16384
Disk = 50000000
HasFileSystems = "cvmfs,nfs"
State = "Unclaimed"
Activity = "Idle"
Start = true
Requirements = START && (TARGET.RequestMemory <= Memory)

Name = "slot1@exec002.example.org"
Machine = "exec002.example.org"
Arch = "x86_64"
OpSys = "LINUX"
Cpus = 4
Memory = 8192
Disk = 20000000
HasFileSystems = "nfs"
State = "Unclaimed"
Activity = "Idle"
Start = true
Requirements = START

Name = "slot1@exec003.example.org"
Machine = "exec003.example.org"
Arch = "X86_64"
OpSys = "LINUX"
Cpus = 16
Memory = 65536
Disk = 100000000
HasFileSystems = "cvmfs, singularity"
State = "Unclaimed"
Activity = "Idle"
Start = (TARGET.Owner =!= "mallory")
Requirements = START && (TARGET.RequestCpus <= Cpus)

Name = "slot1@exec004.example.org"
Machine = "exec004.example.org"
Arch = "aarch64"
OpSys = "LINUX"
Cpus = 64
Memory = 262144
Disk = 100000000
HasFileSystems = "cvmfs"
State = "Unclaimed"
Activity = "Idle"
Start = true
Requirements = START

Name = "slot2@exec003.example.org"
Machine = "exec003.example.org"
Arch = "X86_64"
OpSys = "LINUX"
Cpus = 1
Memory = 2048
Disk = 1000000
HasFileSystems = "cvmfs"
State = "Unclaimed"
Activity = "Idle"
Start = KeyboardIdle > 15 * 60
Requirements = START
