package main

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/hub"
)

func rmCmd() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "rm ORG/REPO[@REVISION]",
		Short: "Remove a repository (or one revision) from the Hugging Face cache",
		Long: `Remove a model repository's entry from the Hugging Face cache, or with
@REVISION only that snapshot, the refs naming it and the blobs no other
snapshot uses. Shows what it will delete and asks first (--yes skips the
question).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := hub.ParseRef(args[0])
			if err != nil {
				return err
			}
			if r.Quant != "" {
				return fmt.Errorf("%s: rm removes a repository or a revision, not one quant", args[0])
			}
			plan, err := hub.PlanRemoval(hub.CacheDir(), r.Repo, r.Revision)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			what := "hf://" + r.Repo
			if r.Revision != "" {
				what += "@" + r.Revision
			}
			fmt.Fprintf(out, "Removing %s frees %s:\n", what, hub.Size(plan.Bytes))
			for _, p := range plan.Paths {
				fmt.Fprintln(out, "  "+p)
			}
			if !yes {
				fmt.Fprint(out, "Delete these? [y/N] ")
				line, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
					fmt.Fprintln(out, "Nothing deleted.")
					return nil
				}
			}
			if err := plan.Apply(); err != nil {
				return err
			}
			fmt.Fprintln(out, "Deleted.")
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "delete without asking")
	return cmd
}
