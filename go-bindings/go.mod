module github.com/cuzk-project/cuzk/go-bindings

go 1.22

require github.com/filecoin-project/go-state-types v0.16.0
