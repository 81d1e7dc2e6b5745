package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/model"
)

// synthFolder is `siskin synth` for an architecture written as a Hugging
// Face folder (model.Arch.Folder) rather than one GGUF file.
func synthFolder(cmd *cobra.Command, a *model.Arch, shape, out string, seed uint64, progress string) error {
	if out == "" {
		return fmt.Errorf("-o DIR is required (the %s folder to write)", a.Name)
	}
	if err := a.CheckShape(shape); err != nil {
		return err
	}
	update, finish, err := newProgress(cmd.ErrOrStderr(), progress, "synth "+a.Name+" "+shape)
	if err != nil {
		return err
	}
	start := time.Now()
	wrote, err := a.Folder.Write(out, shape, seed, update)
	finish(err == nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %s %s, %s in %.1fs\n", out, a.Name, shape, wrote, time.Since(start).Seconds())
	return nil
}
