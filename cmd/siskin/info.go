package main

import (
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/siskin-ml/siskin/model/load"
	"github.com/siskin-ml/siskin/tensor"
)

func infoCmd() *cobra.Command {
	var (
		modelPath string
		ctxLen    int
	)
	cmd := &cobra.Command{
		Use:   "info -m MODEL",
		Short: "Print a model's architecture, hyper-parameters, tensors and memory needs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if modelPath == "" {
				return fmt.Errorf("-m MODEL is required (a .gguf file or a Hugging Face folder)")
			}
			s, err := load.Source(modelPath)
			if err != nil {
				return err
			}
			defer s.Close()
			c, err := load.Config(s)
			if err != nil {
				return err
			}
			if ctxLen <= 0 {
				ctxLen = c.ContextLength
				if ctxLen <= 0 || ctxLen > 4096 {
					ctxLen = 4096
				}
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			p := func(k string, v any) { fmt.Fprintf(w, "%s\t%v\n", k, v) }
			p("path", s.Path)
			p("format", s.Format)
			p("architecture", c.Arch)
			p("vocab", c.Vocab)
			p("hidden", c.Hidden)
			p("layers", c.Layers)
			p("heads / kv heads / head dim", fmt.Sprintf("%d / %d / %d", c.Heads, c.KVHeads, c.HeadDim))
			p("feed-forward", c.FFN)
			p("norm eps", c.Eps)
			p("context length (trained)", c.ContextLength)
			p("rope", c.Rope)
			p("tied embeddings", c.Tied)
			sliding := 0
			for _, l := range c.LayerSpecs {
				if l.Sliding {
					sliding++
				}
			}
			if sliding > 0 {
				p("sliding layers", fmt.Sprintf("%d of %d, window %d", sliding, c.Layers, c.SlidingWindow))
			}
			specs := map[string]bool{}
			for _, l := range c.LayerSpecs {
				k := fmt.Sprintf("rope dims %d theta %g (sliding %v)", l.RopeDims, l.RopeTheta, l.Sliding)
				if !specs[k] {
					specs[k] = true
					p("layer type", k)
				}
			}
			count, bytes := s.TensorStats()
			var types []tensor.Type
			var total int64
			for t := range count {
				types = append(types, t)
				total += bytes[t]
			}
			sort.Slice(types, func(i, j int) bool { return types[i].String() < types[j].String() })
			for _, t := range types {
				p("tensors "+t.String(), fmt.Sprintf("%d (%s)", count[t], human(bytes[t])))
			}
			p("weight bytes", fmt.Sprintf("%d (%s)", total, human(total)))
			kvb := c.KVBytes(ctxLen)
			p(fmt.Sprintf("kv cache at %d tokens (%s)", ctxLen, c.KVType), human(kvb))
			p(fmt.Sprintf("memory at %d tokens", ctxLen), human(total+kvb))
			return w.Flush()
		},
	}
	cmd.Flags().StringVarP(&modelPath, "model", "m", "", "model: a .gguf file or a Hugging Face folder")
	cmd.Flags().IntVarP(&ctxLen, "ctx", "c", 0, "context length for the memory estimate (default: trained context, at most 4096)")
	return cmd
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
