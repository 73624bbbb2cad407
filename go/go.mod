module threadlab/go

go 1.19
