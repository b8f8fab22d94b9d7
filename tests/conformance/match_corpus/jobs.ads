MyType = "Job"
ClusterId = 100
ProcId = 0
Owner = "carol"
User = "carol@example.org"
AcctGroup = "group_physics"
JobUniverse = 5
JobPrio = 5
Department = "physics"
RequestCpus = 2
RequestMemory = 1024
RequestDisk = 1024
DiskUsage = 1
ShouldTransferFiles = "IF_NEEDED"
RequestGPUs = 1
FileSystemDomain = "example.org"
Requirements = (TARGET.Arch == "aarch64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer)) && (TARGET.GPUs >= RequestGPUs)

MyType = "Job"
ClusterId = 101
ProcId = 0
Owner = "alice"
User = "alice@example.org"
AcctGroup = "group_bio"
JobUniverse = 5
JobPrio = -3
Department = "physics"
RequestCpus = 1
RequestMemory = 2048
RequestDisk = 100000
DiskUsage = 1
ShouldTransferFiles = "YES"
FileSystemDomain = "example.org"
Requirements = ((TARGET.HasSingularity == true)) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.HasFileTransfer)
Rank = TARGET.Memory

MyType = "Job"
ClusterId = 102
ProcId = 0
Owner = "carol"
User = "carol@example.org"
AcctGroup = "group_bio"
JobUniverse = 5
JobPrio = 0
Department = "physics"
RequestCpus = 4
RequestMemory = 8192
RequestDisk = 100000
DiskUsage = 1000
ShouldTransferFiles = "IF_NEEDED"
FileSystemDomain = "example.org"
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))
Rank = TARGET.KFlops / 1000

MyType = "Job"
ClusterId = 103
ProcId = 0
Owner = "dave"
User = "dave@example.org"
AcctGroup = "group_bio"
JobUniverse = 5
JobPrio = 2
Department = "physics"
RequestCpus = 2
RequestMemory = 512
RequestDisk = 100000
DiskUsage = 1000
ShouldTransferFiles = "IF_NEEDED"
FileSystemDomain = "example.org"
Requirements = (stringListMember(TARGET.Machine, "node01.example.org,node04.example.org")) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))
Rank = -TARGET.LoadAvg

MyType = "Job"
ClusterId = 104
ProcId = 0
Owner = "carol"
User = "carol@example.org"
AcctGroup = "group_bio"
JobUniverse = 5
JobPrio = -1
Department = "chemistry"
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 100000
DiskUsage = 1000
ShouldTransferFiles = "IF_NEEDED"
RequestGPUs = 1
FileSystemDomain = "example.org"
Requirements = (stringListsIntersect(TARGET.SupportedProjects, "cms atlas")) && (TARGET.Arch == "aarch64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer)) && (TARGET.GPUs >= RequestGPUs)
Rank = TARGET.Cpus * 10 + TARGET.Memory

MyType = "Job"
ClusterId = 105
ProcId = 0
Owner = "dave"
User = "dave@example.org"
AcctGroup = "group_physics"
JobUniverse = 5
JobPrio = 4
Department = "physics"
RequestCpus = 1
RequestMemory = 8192
RequestDisk = 1024
DiskUsage = 1000
ShouldTransferFiles = "IF_NEEDED"
RequestGPUs = 1
FileSystemDomain = "example.org"
Requirements = (versionGE(split(TARGET.CondorVersion)[1], "10.0.0")) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer)) && (TARGET.GPUs >= RequestGPUs)
Rank = versionCmp(split(TARGET.CondorVersion)[1], "23.0.0")

MyType = "Job"
ClusterId = 106
ProcId = 0
Owner = "alice"
User = "alice@example.org"
AcctGroup = "group_physics"
JobUniverse = 5
JobPrio = 1
Department = "physics"
RequestCpus = 4
RequestMemory = 8192
RequestDisk = 1024
DiskUsage = 1
ShouldTransferFiles = "NO"
FileSystemDomain = "example.org"
Requirements = (version_in_range(TARGET.CUDADriverVersion, "11.0", "12.9")) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.FileSystemDomain == MY.FileSystemDomain)
Rank = (TARGET.Arch == "X86_64") * 5

MyType = "Job"
ClusterId = 107
ProcId = 0
Owner = "dave"
User = "dave@example.org"
AcctGroup = "group_bio"
JobUniverse = 5
JobPrio = -1
Department = "chemistry"
RequestCpus = 2
RequestMemory = 1024
RequestDisk = 1024
DiskUsage = 1000
ShouldTransferFiles = "IF_NEEDED"
RequestGPUs = 1
FileSystemDomain = "example.org"
Requirements = ((TARGET.CUDACapability >= 7.0)) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer)) && (TARGET.GPUs >= RequestGPUs)
Rank = TARGET.Department =?= "physics"

MyType = "Job"
ClusterId = 108
ProcId = 0
Owner = "mallory"
User = "mallory@example.org"
AcctGroup = "group_physics"
JobUniverse = 5
JobPrio = 4
Department = "physics"
RequestCpus = 1
RequestMemory = 8192
RequestDisk = 100000
DiskUsage = 1000
ShouldTransferFiles = "IF_NEEDED"
FileSystemDomain = "example.org"
Requirements = (countMatches(Capability >= 8.0, TARGET.AvailableGPUs) >= 1) && (TARGET.Arch == "aarch64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))

MyType = "Job"
ClusterId = 109
ProcId = 0
Owner = "carol"
User = "carol@example.org"
AcctGroup = "group_physics"
JobUniverse = 5
JobPrio = -2
Department = "physics"
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 1024
DiskUsage = 1000
ShouldTransferFiles = "YES"
RequestGPUs = 1
FileSystemDomain = "example.org"
Requirements = (regexp("^node0[1-3]", TARGET.Machine)) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.HasFileTransfer) && (TARGET.GPUs >= RequestGPUs)
Rank = TARGET.Memory

MyType = "Job"
ClusterId = 110
ProcId = 0
Owner = "dave"
User = "dave@example.org"
AcctGroup = "group_physics"
JobUniverse = 5
JobPrio = -3
Department = "chemistry"
RequestCpus = 2
RequestMemory = 512
RequestDisk = 1024
DiskUsage = 1000
ShouldTransferFiles = "IF_NEEDED"
RequestGPUs = 1
FileSystemDomain = "example.org"
Requirements = ((TARGET.KFlops > 1000000) || (TARGET.Mips > 20000)) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer)) && (TARGET.GPUs >= RequestGPUs)
Rank = TARGET.KFlops / 1000

MyType = "Job"
ClusterId = 111
ProcId = 0
Owner = "carol"
User = "carol@example.org"
AcctGroup = "group_bio"
JobUniverse = 5
JobPrio = -5
Department = "physics"
RequestCpus = 1
RequestMemory = 8192
RequestDisk = 100000
DiskUsage = 1000
ShouldTransferFiles = "IF_NEEDED"
RequestGPUs = 1
FileSystemDomain = "example.org"
Requirements = (stringListSubsetMatch("avx,avx2", TARGET.CpuFeatures)) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer)) && (TARGET.GPUs >= RequestGPUs)
Rank = -TARGET.LoadAvg

MyType = "Job"
ClusterId = 112
ProcId = 0
Owner = "dave"
User = "dave@example.org"
AcctGroup = "group_physics"
JobUniverse = 5
JobPrio = -1
Department = "physics"
RequestCpus = 4
RequestMemory = 1024
RequestDisk = 100000
DiskUsage = 1
ShouldTransferFiles = "IF_NEEDED"
RequestGPUs = 1
FileSystemDomain = "example.org"
Requirements = ((TARGET.OpSysMajorVer >= 8) && (TARGET.TotalCpus >= RequestCpus * 2)) && (TARGET.Arch == "aarch64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer)) && (TARGET.GPUs >= RequestGPUs)
Rank = TARGET.Cpus * 10 + TARGET.Memory

MyType = "Job"
ClusterId = 113
ProcId = 0
Owner = "carol"
User = "carol@example.org"
AcctGroup = "group_bio"
JobUniverse = 5
JobPrio = 4
Department = "physics"
RequestCpus = 4
RequestMemory = 1024
RequestDisk = 100000
DiskUsage = 1
ShouldTransferFiles = "IF_NEEDED"
FileSystemDomain = "example.org"
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))
Rank = versionCmp(split(TARGET.CondorVersion)[1], "23.0.0")

MyType = "Job"
ClusterId = 114
ProcId = 0
Owner = "dave"
User = "dave@example.org"
AcctGroup = "group_physics"
JobUniverse = 5
JobPrio = 0
Department = "chemistry"
RequestCpus = 1
RequestMemory = 2048
RequestDisk = 100000
DiskUsage = 1
ShouldTransferFiles = "YES"
FileSystemDomain = "example.org"
Requirements = ((TARGET.HasSingularity == true)) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.HasFileTransfer)
Rank = (TARGET.Arch == "X86_64") * 5

MyType = "Job"
ClusterId = 115
ProcId = 0
Owner = "alice"
User = "alice@example.org"
AcctGroup = "group_bio"
JobUniverse = 5
JobPrio = 2
Department = "chemistry"
RequestCpus = 1
RequestMemory = 2048
RequestDisk = 100000
DiskUsage = 1
ShouldTransferFiles = "IF_NEEDED"
FileSystemDomain = "example.org"
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))
Rank = TARGET.Department =?= "physics"

MyType = "Job"
ClusterId = 116
ProcId = 0
Owner = "mallory"
User = "mallory@example.org"
AcctGroup = "group_physics"
JobUniverse = 5
JobPrio = -4
Department = "chemistry"
RequestCpus = 4
RequestMemory = 1024
RequestDisk = 1024
DiskUsage = 1
ShouldTransferFiles = "IF_NEEDED"
FileSystemDomain = "example.org"
Requirements = (stringListMember(TARGET.Machine, "node01.example.org,node04.example.org")) && (TARGET.Arch == "aarch64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))

MyType = "Job"
ClusterId = 117
ProcId = 0
Owner = "carol"
User = "carol@example.org"
AcctGroup = "group_bio"
JobUniverse = 5
JobPrio = -3
Department = "physics"
RequestCpus = 4
RequestMemory = 2048
RequestDisk = 100000
DiskUsage = 1000
ShouldTransferFiles = "NO"
FileSystemDomain = "example.org"
Requirements = (stringListsIntersect(TARGET.SupportedProjects, "cms atlas")) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.FileSystemDomain == MY.FileSystemDomain)
Rank = TARGET.Memory

MyType = "Job"
ClusterId = 118
ProcId = 0
Owner = "mallory"
User = "mallory@example.org"
AcctGroup = "group_bio"
JobUniverse = 5
JobPrio = -3
Department = "physics"
RequestCpus = 4
RequestMemory = 512
RequestDisk = 100000
DiskUsage = 1
ShouldTransferFiles = "IF_NEEDED"
FileSystemDomain = "example.org"
Requirements = (versionGE(split(TARGET.CondorVersion)[1], "10.0.0")) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))
Rank = TARGET.KFlops / 1000

MyType = "Job"
ClusterId = 119
ProcId = 0
Owner = "alice"
User = "alice@example.org"
AcctGroup = "group_bio"
JobUniverse = 5
JobPrio = 0
Department = "physics"
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 100000
DiskUsage = 1000
ShouldTransferFiles = "IF_NEEDED"
FileSystemDomain = "example.org"
Requirements = (version_in_range(TARGET.CUDADriverVersion, "11.0", "12.9")) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))
Rank = -TARGET.LoadAvg

MyType = "Job"
ClusterId = 120
ProcId = 0
Owner = "alice"
User = "alice@example.org"
AcctGroup = "group_bio"
JobUniverse = 5
JobPrio = -2
Department = "chemistry"
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 1024
DiskUsage = 1
ShouldTransferFiles = "YES"
RequestGPUs = 1
FileSystemDomain = "example.org"
Requirements = ((TARGET.CUDACapability >= 7.0)) && (TARGET.Arch == "aarch64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.HasFileTransfer) && (TARGET.GPUs >= RequestGPUs)
Rank = TARGET.Cpus * 10 + TARGET.Memory

MyType = "Job"
ClusterId = 121
ProcId = 0
Owner = "mallory"
User = "mallory@example.org"
AcctGroup = "group_bio"
JobUniverse = 5
JobPrio = -1
Department = "physics"
RequestCpus = 1
RequestMemory = 2048
RequestDisk = 100000
DiskUsage = 1000
ShouldTransferFiles = "YES"
RequestGPUs = 1
FileSystemDomain = "example.org"
Requirements = (countMatches(Capability >= 8.0, TARGET.AvailableGPUs) >= 1) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.HasFileTransfer) && (TARGET.GPUs >= RequestGPUs)
Rank = versionCmp(split(TARGET.CondorVersion)[1], "23.0.0")

MyType = "Job"
ClusterId = 122
ProcId = 0
Owner = "carol"
User = "carol@example.org"
AcctGroup = "group_physics"
JobUniverse = 5
JobPrio = -4
Department = "chemistry"
RequestCpus = 1
RequestMemory = 512
RequestDisk = 1024
DiskUsage = 1000
ShouldTransferFiles = "NO"
FileSystemDomain = "example.org"
Requirements = (regexp("^node0[1-3]", TARGET.Machine)) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.FileSystemDomain == MY.FileSystemDomain)
Rank = (TARGET.Arch == "X86_64") * 5

MyType = "Job"
ClusterId = 123
ProcId = 0
Owner = "bob"
User = "bob@example.org"
AcctGroup = "group_physics"
JobUniverse = 5
JobPrio = -1
Department = "chemistry"
RequestCpus = 2
RequestMemory = 512
RequestDisk = 100000
DiskUsage = 1000
ShouldTransferFiles = "NO"
FileSystemDomain = "example.org"
Requirements = ((TARGET.KFlops > 1000000) || (TARGET.Mips > 20000)) && (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.FileSystemDomain == MY.FileSystemDomain)
Rank = TARGET.Department =?= "physics"

MyType = "Job"
ClusterId = 124
ProcId = 0
Owner = "carol"
User = "carol@example.org"
AcctGroup = "group_bio"
JobUniverse = 5
JobPrio = -5
Department = "physics"
RequestCpus = 1
RequestMemory = 1024
RequestDisk = 100000
DiskUsage = 1000
ShouldTransferFiles = "IF_NEEDED"
FileSystemDomain = "example.org"
Requirements = (stringListSubsetMatch("avx,avx2", TARGET.CpuFeatures)) && (TARGET.Arch == "aarch64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))
