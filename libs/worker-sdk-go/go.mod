module github.com/po-platform/worker-sdk-go

go 1.19
